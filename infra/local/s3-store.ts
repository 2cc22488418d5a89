import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BuildAppOptions } from 'fauxqs';

/**
 * fauxqs's S3 store made durable for the local runtime: fauxqs keeps objects in memory only,
 * so this store writes each whole object under a folder (`<dir>/<bucket>/<key>.body` and
 * `.json`) as S3 accepts it, removes it on delete, and loads them all at start. `npm start`
 * passes `<data dir>/s3`: uploaded files survive a restart, as their DynamoDB records do.
 * Multipart parts in flight stay in memory: an upload cut by a restart is gone, as on S3
 * after its abort rule.
 */
export type S3Store = NonNullable<BuildAppOptions['stores']>['s3Store'];

/** fauxqs exports its store class only from a module its package map does not expose. */
async function s3StoreClass(): Promise<new () => S3Store> {
  const file = resolve(import.meta.dirname, '../../node_modules/fauxqs/dist/s3/s3Store.js');
  return ((await import(pathToFileURL(file).href)) as { S3Store: new () => S3Store }).S3Store;
}

interface StoredMeta {
  key: string;
  contentType: string;
  metadata: Record<string, string>;
}

const fileName = (key: string) => encodeURIComponent(key);

/** Writes a file whole or not at all (a temporary name, then a rename). */
function writeWhole(path: string, data: Buffer | string): void {
  writeFileSync(`${path}.tmp`, data);
  renameSync(`${path}.tmp`, path);
}

export async function persistentS3Store(dir: string): Promise<S3Store> {
  const S3StoreClass = await s3StoreClass();
  const store = new S3StoreClass();
  const uploads = (store as unknown as { multipartUploads: Map<string, { bucket: string }> }).multipartUploads;

  const save = (bucket: string, key: string, body: Buffer, contentType: string, metadata: Record<string, string>) => {
    const folder = join(dir, encodeURIComponent(bucket));
    mkdirSync(folder, { recursive: true });
    // The body first: the metadata file is what marks an object as whole.
    writeWhole(join(folder, `${fileName(key)}.body`), body);
    writeWhole(join(folder, `${fileName(key)}.json`), JSON.stringify({ key, contentType, metadata } satisfies StoredMeta));
  };
  const forget = (bucket: string, key: string) => {
    const base = join(dir, encodeURIComponent(bucket), fileName(key));
    rmSync(`${base}.json`, { force: true });
    rmSync(`${base}.body`, { force: true });
  };

  // Load what earlier runs kept, through the in-memory store's own methods.
  mkdirSync(dir, { recursive: true });
  for (const bucketFolder of readdirSync(dir)) {
    const bucket = decodeURIComponent(bucketFolder);
    store.createBucket(bucket);
    for (const name of readdirSync(join(dir, bucketFolder)).filter((n) => n.endsWith('.json'))) {
      const meta = JSON.parse(readFileSync(join(dir, bucketFolder, name), 'utf8')) as StoredMeta;
      const body = readFileSync(join(dir, bucketFolder, `${name.slice(0, -'.json'.length)}.body`));
      store.putObject(bucket, meta.key, body, meta.contentType, meta.metadata);
    }
  }

  const putObject = store.putObject.bind(store);
  store.putObject = (bucket, key, body, contentType, metadata) => {
    const object = putObject(bucket, key, body, contentType, metadata);
    save(bucket, key, object.body, object.contentType, object.metadata);
    return object;
  };
  const complete = store.completeMultipartUpload.bind(store);
  store.completeMultipartUpload = (uploadId, parts) => {
    const bucket = uploads.get(uploadId)?.bucket;
    const object = complete(uploadId, parts);
    if (bucket !== undefined) save(bucket, object.key, object.body, object.contentType, object.metadata);
    return object;
  };
  const deleteObject = store.deleteObject.bind(store);
  store.deleteObject = (bucket, key) => {
    deleteObject(bucket, key);
    forget(bucket, key);
  };
  return store;
}
