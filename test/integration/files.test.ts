import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import OpenAI, { NotFoundError, toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { call, errorOf, startTestGateway } from '../support/gateway';

// The Files API on the local runtime: metadata in DynamoDB Local, bytes in fauxqs's S3.
let gw: LocalGateway;
let otherKey: string;

beforeAll(async () => {
  gw = await startTestGateway();
  const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'Files other team' } });
  expect(ws.status, ws.text).toBe(200);
  const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'other', workspace_id: ws.body.id, scopes: ['gateway'] } });
  expect(key.status, key.text).toBe(200);
  otherKey = key.body.secret;
});

afterAll(async () => {
  await gw?.stop();
});

const client = (key = gw.adminKey) => new OpenAI({ baseURL: gw.baseUrl, apiKey: key, maxRetries: 0 });

/** What the files bucket holds, read straight from the emulator. */
async function bucketKeys(): Promise<string[]> {
  const s3 = new S3Client({
    region: 'us-east-1',
    endpoint: process.env.AWS_ENDPOINT_URL_S3,
    forcePathStyle: true,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    const out = await s3.send(new ListObjectsV2Command({ Bucket: process.env.FILES_BUCKET }));
    return (out.Contents ?? []).map((o) => o.Key!);
  } finally {
    s3.destroy();
  }
}

const batchLine = (id: string, url = '/v1/chat/completions') =>
  JSON.stringify({ custom_id: id, method: 'POST', url, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] } });

/** A multipart body by hand, for the cases the SDK will not send. */
function multipart(parts: Array<{ name: string; value: string | Buffer; filename?: string }>) {
  const boundary = `----files-test-${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename ? `; filename="${p.filename}"` : ''}`;
    const type = p.filename ? 'content-type: application/octet-stream\r\n' : '';
    chunks.push(Buffer.from(`--${boundary}\r\ncontent-disposition: ${disposition}\r\n${type}\r\n`), Buffer.from(p.value), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

async function postForm(parts: Parameters<typeof multipart>[0]) {
  const { body, contentType } = multipart(parts);
  const res = await fetch(`${gw.url}/v1/files`, { method: 'POST', headers: { 'x-gateway-api-key': gw.adminKey, 'content-type': contentType }, body });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) };
}

describe('the openai SDK round trip', () => {
  it('creates, retrieves, streams the bytes back identical (multi-MB), lists, deletes, then 404s', async () => {
    const openai = client();
    const bytes = randomBytes(7 * 1024 * 1024 + 123); // above one S3 part: a multipart upload
    const created = await openai.files.create({ file: await toFile(bytes, 'weights.bin'), purpose: 'user_data' });
    expect(created).toMatchObject({ object: 'file', bytes: bytes.length, filename: 'weights.bin', purpose: 'user_data', expires_at: null });
    expect(created.id).toMatch(/^file-[0-9a-z]{26}$/);
    expect(Math.abs(created.created_at - Date.now() / 1000)).toBeLessThan(60);

    expect(await openai.files.retrieve(created.id)).toEqual(created);

    const content = await openai.files.content(created.id);
    expect(content.headers.get('content-length')).toBe(String(bytes.length));
    expect(Buffer.from(await content.arrayBuffer()).equals(bytes)).toBe(true);

    const listed = await openai.files.list();
    expect(listed.data.map((f) => f.id)).toContain(created.id);

    expect(await openai.files.delete(created.id)).toEqual({ id: created.id, object: 'file', deleted: true });
    await expect(openai.files.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(openai.files.content(created.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(openai.files.delete(created.id)).rejects.toBeInstanceOf(NotFoundError);
    expect((await bucketKeys()).filter((k) => k.endsWith(created.id))).toEqual([]);
  });

  it('a batch file: validated, expires after 30 days by default or after expires_after', async () => {
    const openai = client();
    const text = `${batchLine('a')}\n${batchLine('b', '/v1/embeddings')}\n`;
    const created = await openai.files.create({ file: await toFile(Buffer.from(text), 'input.jsonl'), purpose: 'batch' });
    expect(created.purpose).toBe('batch');
    expect(created.expires_at).toBe(created.created_at + 30 * 24 * 3600);
    const short = await openai.files.create({
      file: await toFile(Buffer.from(text), 'input.jsonl'),
      purpose: 'batch',
      expires_after: { anchor: 'created_at', seconds: 3600 },
    });
    expect(short.expires_at).toBe(short.created_at + 3600);
    expect(await (await openai.files.content(created.id)).text()).toBe(text);
  });

  it('lists by purpose, pages with after and limit, in either order', async () => {
    const openai = client(otherKey);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await openai.files.create({ file: await toFile(Buffer.from(`v${i}`), `v${i}.txt`), purpose: 'vision' })).id);
    await openai.files.create({ file: await toFile(Buffer.from('x'), 'x.txt'), purpose: 'assistants' });

    const seen: string[] = [];
    for await (const f of openai.files.list({ purpose: 'vision', limit: 2 })) seen.push(f.id);
    expect(seen).toEqual([...ids].reverse());
    const first = await openai.files.list({ purpose: 'vision', limit: 2, order: 'asc' });
    expect(first.data.map((f) => f.id)).toEqual(ids.slice(0, 2));
    expect(first.has_more).toBe(true);
    const next = await openai.files.list({ purpose: 'vision', limit: 2, order: 'asc', after: ids[1] });
    expect(next.data.map((f) => f.id)).toEqual([ids[2]]);
    expect(next.has_more).toBe(false);
  });
});

describe('workspace isolation', () => {
  it("another workspace's key gets 404 on every route and does not see the file in its list", async () => {
    const mine = await client().files.create({ file: await toFile(Buffer.from('secret'), 'mine.txt'), purpose: 'user_data' });
    const theirs = client(otherKey);
    await expect(theirs.files.retrieve(mine.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(theirs.files.content(mine.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(theirs.files.delete(mine.id)).rejects.toBeInstanceOf(NotFoundError);
    expect((await theirs.files.list()).data.map((f) => f.id)).not.toContain(mine.id);
    expect((await client().files.retrieve(mine.id)).id).toBe(mine.id);
  });
});

describe('bad input is a 400 naming the field', () => {
  it('no file, no purpose, a bad purpose, a text field as file, a JSON body', async () => {
    const noFile = await postForm([{ name: 'purpose', value: 'batch' }]);
    expect(noFile.status, noFile.text).toBe(400);
    expect(errorOf(noFile as never)).toMatchObject({ param: 'file', type: 'invalid_request_error' });

    const noPurpose = await postForm([{ name: 'file', value: 'x', filename: 'x.txt' }]);
    expect(noPurpose.status).toBe(400);
    expect(errorOf(noPurpose as never).param).toBe('purpose');

    const badPurpose = await postForm([
      { name: 'file', value: 'x', filename: 'x.txt' },
      { name: 'purpose', value: 'training' },
    ]);
    expect(badPurpose.status).toBe(400);
    expect(errorOf(badPurpose as never)).toMatchObject({ param: 'purpose', code: 'invalid_value' });

    const textFile = await postForm([
      { name: 'file', value: 'x' },
      { name: 'purpose', value: 'user_data' },
    ]);
    expect(textFile.status).toBe(400);
    expect(errorOf(textFile as never).param).toBe('file');

    const json = await call(gw, 'POST', '/v1/files', { body: { file: 'x', purpose: 'batch' } });
    expect(json.status).toBe(400);
    expect(errorOf(json).param).toBe('file');

    const badExpiry = await postForm([
      { name: 'file', value: 'x', filename: 'x.txt' },
      { name: 'purpose', value: 'user_data' },
      { name: 'expires_after[anchor]', value: 'created_at' },
      { name: 'expires_after[seconds]', value: '60' },
    ]);
    expect(badExpiry.status).toBe(400);
    expect(errorOf(badExpiry as never).param).toBe('expires_after[seconds]');
  });

  it('a batch file is checked as OpenAI checks it at upload: requests under the limits; bad lines are left to the batch', async () => {
    const before = await bucketKeys();
    const empty = await postForm([
      { name: 'file', value: '\n\n', filename: 'input.jsonl' },
      { name: 'purpose', value: 'batch' },
    ]);
    expect(empty.status, empty.text).toBe(400);
    expect(errorOf(empty as never)).toMatchObject({ param: 'file', code: 'invalid_batch_input' });
    expect(await bucketKeys()).toEqual(before);

    const badLines = await postForm([
      { name: 'file', value: `${batchLine('a')}\n{not json\n${batchLine('a')}\n`, filename: 'input.jsonl' },
      { name: 'purpose', value: 'batch' },
    ]);
    expect(badLines.status, badLines.text).toBe(200);
    expect(badLines.body).toMatchObject({ purpose: 'batch', filename: 'input.jsonl' });
  });

  it('an unknown or malformed id is a 404 naming file_id', async () => {
    for (const id of ['file-00000000000000000000000000', 'nope', 'file-..']) {
      const res = await call(gw, 'GET', `/v1/files/${id}`);
      expect(res.status, res.text).toBe(404);
      expect(errorOf(res).param).toBe('file_id');
    }
  });
});

describe('a caller leaving mid-upload', () => {
  it('leaves no file record and no object', async () => {
    const keysBefore = await bucketKeys();
    const listBefore = (await client().files.list()).data.length;
    const { body, contentType } = multipart([
      { name: 'purpose', value: 'user_data' },
      { name: 'file', value: randomBytes(2 * 1024 * 1024), filename: 'cut.bin' },
    ]);
    const url = new URL(gw.url);
    await new Promise<void>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.write(
          `POST /v1/files HTTP/1.1\r\nhost: ${url.host}\r\nx-gateway-api-key: ${gw.adminKey}\r\ncontent-type: ${contentType}\r\ncontent-length: ${body.length}\r\n\r\n`,
        );
        socket.write(body.subarray(0, body.length / 2), () => {
          socket.destroy();
          resolve();
        });
      });
      socket.on('error', reject);
    });
    await new Promise((r) => setTimeout(r, 500));
    expect((await client().files.list()).data.length).toBe(listBefore);
    expect(await bucketKeys()).toEqual(keysBefore);
  });
});

describe('an upload S3 refuses', () => {
  it('answers a 5xx in the error shape and leaves no file record', async () => {
    const listBefore = (await client().files.list()).data.map((f) => f.id);
    const bucket = process.env.FILES_BUCKET;
    process.env.FILES_BUCKET = 'no-such-files-bucket'; // read per upload: S3 answers NoSuchBucket
    try {
      const res = await postForm([
        { name: 'purpose', value: 'user_data' },
        { name: 'file', value: randomBytes(6 * 1024 * 1024), filename: 'lost.bin' },
      ]);
      expect(res.status, res.text).toBeGreaterThanOrEqual(500);
      expect(errorOf(res as never).type).toBe('server_error');
    } finally {
      process.env.FILES_BUCKET = bucket;
    }
    expect((await client().files.list()).data.map((f) => f.id)).toEqual(listBefore);
  });
});

describe('expiry', () => {
  it('an expiring file carries a DynamoDB TTL at expires_at; once past it, every read answers 404 and the list leaves it out', async () => {
    const openai = client();
    const file = await openai.files.create({
      file: await toFile(Buffer.from('short-lived'), 'short.txt'),
      purpose: 'user_data',
      expires_after: { anchor: 'created_at', seconds: 3600 },
    });
    const kept = await openai.files.create({ file: await toFile(Buffer.from('kept'), 'kept.txt'), purpose: 'user_data' });
    const ddb = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1', endpoint: process.env.AWS_ENDPOINT_URL_DYNAMODB }));
    const key = (id: string) => ({ pk: `WS#${gw.workspaceId}`, sk: `FILE#${id}` });
    try {
      const item = (await ddb.send(new GetCommand({ TableName: process.env.TABLE_JOBS, Key: key(file.id) }))).Item;
      expect(item?.ttl).toBe(file.expires_at);
      const keptItem = (await ddb.send(new GetCommand({ TableName: process.env.TABLE_JOBS, Key: key(kept.id) }))).Item;
      expect(keptItem).toBeDefined();
      expect(keptItem!.ttl).toBeUndefined();

      // An hour later (moved back rather than waited for): the file is gone to every reader.
      await ddb.send(
        new UpdateCommand({
          TableName: process.env.TABLE_JOBS,
          Key: key(file.id),
          UpdateExpression: 'SET expires_at = :past, #ttl = :past',
          ExpressionAttributeNames: { '#ttl': 'ttl' },
          ExpressionAttributeValues: { ':past': Math.floor(Date.now() / 1000) - 1 },
        }),
      );
    } finally {
      ddb.destroy();
    }
    await expect(openai.files.retrieve(file.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(openai.files.content(file.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(openai.files.delete(file.id)).rejects.toBeInstanceOf(NotFoundError);
    const listed = (await openai.files.list()).data.map((f) => f.id);
    expect(listed).not.toContain(file.id);
    expect(listed).toContain(kept.id);
  });
});
