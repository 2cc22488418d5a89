import { createHash, randomBytes } from 'node:crypto';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import OpenAI, { BadRequestError, NotFoundError, toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { call, errorOf, startTestGateway } from '../support/gateway';

// OpenAI's Uploads API on the local runtime: parts staged in fauxqs's S3, assembled at complete.
let gw: LocalGateway;
let otherKey: string;

beforeAll(async () => {
  gw = await startTestGateway();
  const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'Uploads other team' } });
  expect(ws.status, ws.text).toBe(200);
  const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'other', workspace_id: ws.body.id, scopes: ['gateway'] } });
  expect(key.status, key.text).toBe(200);
  otherKey = key.body.secret;
});

afterAll(async () => {
  await gw?.stop();
});

const client = (key = gw.adminKey) => new OpenAI({ baseURL: gw.baseUrl, apiKey: key, maxRetries: 0, timeout: 120_000 });

/** The keys under an upload's staging prefix, read straight from the emulator. */
async function stagedKeys(uploadId: string): Promise<string[]> {
  const s3 = new S3Client({
    region: 'us-east-1',
    endpoint: process.env.AWS_ENDPOINT_URL_S3,
    forcePathStyle: true,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    const out = await s3.send(new ListObjectsV2Command({ Bucket: process.env.FILES_BUCKET }));
    return (out.Contents ?? []).map((o) => o.Key!).filter((k) => k.includes(`/${uploadId}/`));
  } finally {
    s3.destroy();
  }
}

const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');

async function newUpload(bytes: number, purpose: 'user_data' | 'batch' | 'fine-tune' = 'user_data', key = gw.adminKey) {
  return client(key).uploads.create({ bytes, filename: 'big.bin', purpose, mime_type: 'application/octet-stream' });
}

async function addPart(uploadId: string, data: Buffer, key = gw.adminKey, idempotencyKey?: string) {
  return client(key).uploads.parts.create(
    uploadId,
    { data: await toFile(data, 'part') },
    idempotencyKey ? { headers: { 'Idempotency-Key': idempotencyKey } } : undefined,
  );
}

describe('the openai SDK round trip', () => {
  it('a file above the 10 MB request cap, sent in parts each under S3’s 5 MiB minimum, reads back byte-identical', async () => {
    const openai = client();
    const bytes = randomBytes(12 * 1024 * 1024 + 321);
    const cuts = [0, 4 * 1024 * 1024, 8 * 1024 * 1024, bytes.length];
    const upload = await newUpload(bytes.length);
    expect(upload).toMatchObject({ object: 'upload', status: 'pending', bytes: bytes.length, filename: 'big.bin', purpose: 'user_data', file: null });
    expect(upload.id).toMatch(/^upload_[0-9a-z]{26}$/);
    expect(upload.expires_at).toBe(upload.created_at + 3600);

    const parts = [];
    for (let i = 0; i < cuts.length - 1; i++) parts.push(await addPart(upload.id, bytes.subarray(cuts[i], cuts[i + 1])));
    expect(parts[0]).toMatchObject({ object: 'upload.part', upload_id: upload.id });
    expect(parts[0]!.id).toMatch(/^part_[0-9a-z]{26}$/);
    expect(await stagedKeys(upload.id)).toHaveLength(3);

    const done = await openai.uploads.complete(upload.id, { part_ids: parts.map((p) => p.id), md5: md5(bytes) });
    expect(done).toMatchObject({ id: upload.id, status: 'completed' });
    expect(done.file).toMatchObject({ object: 'file', bytes: bytes.length, filename: 'big.bin', purpose: 'user_data', expires_at: null });
    expect(await openai.files.retrieve(done.file!.id)).toEqual(done.file);

    const content = await openai.files.content(done.file!.id);
    expect(Buffer.from(await content.arrayBuffer()).equals(bytes)).toBe(true);
    expect(await stagedKeys(upload.id)).toEqual([]);

    // Completed: no more parts, no second complete.
    await expect(addPart(upload.id, Buffer.from('late'))).rejects.toBeInstanceOf(BadRequestError);
    await expect(openai.uploads.complete(upload.id, { part_ids: parts.map((p) => p.id) })).rejects.toBeInstanceOf(BadRequestError);
  });

  it('assembles the parts in the order part_ids gives, not the order they arrived', async () => {
    const openai = client();
    const [a, b, c] = [Buffer.from('first;'), Buffer.from('second;'), Buffer.from('third')];
    const upload = await newUpload(a.length + b.length + c.length);
    const pc = await addPart(upload.id, c);
    const pa = await addPart(upload.id, a);
    const pb = await addPart(upload.id, b);
    const done = await openai.uploads.complete(upload.id, { part_ids: [pa.id, pb.id, pc.id] });
    expect(await (await openai.files.content(done.file!.id)).text()).toBe('first;second;third');
  });

  it('a batch upload is checked at complete like a direct upload, and expires after 30 days', async () => {
    const openai = client();
    const line = (id: string, url = '/v1/chat/completions') =>
      JSON.stringify({ custom_id: id, method: 'POST', url, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] } });
    // As at OpenAI, an upload checks the file as a whole (size, line count, not empty); a bad
    // line becomes a line of the batch's error file when it runs (docs/batches.md).
    const empty = Buffer.from('\n  \n');
    const emptyUpload = await newUpload(empty.length, 'batch');
    const emptyPart = await addPart(emptyUpload.id, empty);
    const refused = await call(gw, 'POST', `/v1/uploads/${emptyUpload.id}/complete`, { body: { part_ids: [emptyPart.id] } });
    expect(refused.status, refused.text).toBe(400);
    expect(errorOf(refused)).toMatchObject({ param: 'file', code: 'invalid_batch_input' });
    expect(errorOf(refused).message).toMatch(/no requests/);

    const good = Buffer.from(`${line('a')}\n${line('b', '/v1/images/generations')}\n`);
    const upload = await newUpload(good.length, 'batch');
    const half = Math.floor(good.length / 2);
    const p1 = await addPart(upload.id, good.subarray(0, half));
    const p2 = await addPart(upload.id, good.subarray(half));
    const done = await openai.uploads.complete(upload.id, { part_ids: [p1.id, p2.id] });
    expect(done.file).toMatchObject({ purpose: 'batch', bytes: good.length });
    expect(done.file!.expires_at).toBe(done.file!.created_at + 30 * 24 * 3600);
  });
});

describe('complete refuses what does not add up', () => {
  it('a byte count other than declared, an unknown or repeated part, a wrong md5: 400s naming the field, nothing stored', async () => {
    const data = randomBytes(1000);
    const upload = await newUpload(2000);
    const p1 = await addPart(upload.id, data);
    const p2 = await addPart(upload.id, randomBytes(1000));
    const complete = (body: unknown) => call(gw, 'POST', `/v1/uploads/${upload.id}/complete`, { body });

    const short = await complete({ part_ids: [p1.id] });
    expect(short.status, short.text).toBe(400);
    expect(errorOf(short)).toMatchObject({ param: 'part_ids', code: 'bytes_mismatch' });
    expect(errorOf(short).message).toMatch(/1000 bytes.*2000/);

    const unknown = await complete({ part_ids: [p1.id, 'part_00000000000000000000000000'] });
    expect(unknown.status).toBe(400);
    expect(errorOf(unknown).param).toBe('part_ids');

    const twice = await complete({ part_ids: [p1.id, p1.id] });
    expect(twice.status).toBe(400);
    expect(errorOf(twice).param).toBe('part_ids');

    const noParts = await complete({});
    expect(noParts.status).toBe(400);
    expect(errorOf(noParts).param).toBe('part_ids');

    const wrongMd5 = await complete({ part_ids: [p1.id, p2.id], md5: md5(data) });
    expect(wrongMd5.status, wrongMd5.text).toBe(400);
    expect(errorOf(wrongMd5)).toMatchObject({ param: 'md5', code: 'checksum_mismatch' });

    // Still pending: the right parts complete it.
    const ok = await complete({ part_ids: [p1.id, p2.id] });
    expect(ok.status, ok.text).toBe(200);
  });

  it('bad create input: a file above 512 MB is a 413 naming bytes; missing fields are 400s naming them', async () => {
    const huge = await call(gw, 'POST', '/v1/uploads', {
      body: { bytes: 512 * 1024 * 1024 + 1, filename: 'x', purpose: 'user_data', mime_type: 'text/plain' },
    });
    expect(huge.status, huge.text).toBe(413);
    expect(errorOf(huge).param).toBe('bytes');
    const bigBatch = await call(gw, 'POST', '/v1/uploads', {
      body: { bytes: 200 * 1024 * 1024 + 1, filename: 'x', purpose: 'batch', mime_type: 'text/jsonl' },
    });
    expect(bigBatch.status).toBe(413);
    const noName = await call(gw, 'POST', '/v1/uploads', { body: { bytes: 10, purpose: 'user_data', mime_type: 'text/plain' } });
    expect(noName.status).toBe(400);
    expect(errorOf(noName).param).toBe('filename');
    const badPurpose = await call(gw, 'POST', '/v1/uploads', { body: { bytes: 10, filename: 'x', purpose: 'training', mime_type: 'text/plain' } });
    expect(badPurpose.status).toBe(400);
    expect(errorOf(badPurpose).param).toBe('purpose');
  });

  it('a part without data, or an empty one, is a 400 naming data', async () => {
    const upload = await newUpload(10);
    const json = await call(gw, 'POST', `/v1/uploads/${upload.id}/parts`, { body: { data: 'x' } });
    expect(json.status).toBe(400);
    expect(errorOf(json).param).toBe('data');
    const form = new FormData();
    form.set('other', 'x');
    const res = await fetch(`${gw.url}/v1/uploads/${upload.id}/parts`, { method: 'POST', headers: { 'x-gateway-api-key': gw.adminKey }, body: form });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe('data');
  });
});

describe('cancel', () => {
  it('cancels a pending upload, drops its staged parts, and refuses parts and complete afterwards', async () => {
    const openai = client();
    const upload = await newUpload(10);
    const part = await addPart(upload.id, Buffer.from('0123456789'));
    expect(await stagedKeys(upload.id)).toHaveLength(1);
    const cancelled = await openai.uploads.cancel(upload.id);
    expect(cancelled).toMatchObject({ id: upload.id, status: 'cancelled', file: null });
    expect(await stagedKeys(upload.id)).toEqual([]);
    await expect(addPart(upload.id, Buffer.from('x'))).rejects.toBeInstanceOf(BadRequestError);
    const late = await call(gw, 'POST', `/v1/uploads/${upload.id}/complete`, { body: { part_ids: [part.id] } });
    expect(late.status).toBe(400);
    expect(errorOf(late)).toMatchObject({ param: 'upload_id', code: 'upload_not_pending' });
    await expect(openai.uploads.cancel(upload.id)).rejects.toBeInstanceOf(BadRequestError);
  });
});

describe('expiry', () => {
  it('an upload an hour old is expired: it takes no parts and cannot be completed; its records carry a DynamoDB TTL', async () => {
    const upload = await newUpload(5);
    const part = await addPart(upload.id, Buffer.from('12345'));
    const ddb = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1', endpoint: process.env.AWS_ENDPOINT_URL_DYNAMODB }));
    const key = { pk: `WS#${gw.workspaceId}`, sk: `UPLOAD#${upload.id}` };
    try {
      const item = (await ddb.send(new GetCommand({ TableName: process.env.TABLE_JOBS, Key: key }))).Item;
      expect(item?.ttl).toBe(upload.expires_at + 86400);
      // An hour later (moved back rather than waited for).
      await ddb.send(
        new UpdateCommand({
          TableName: process.env.TABLE_JOBS,
          Key: key,
          UpdateExpression: 'SET expires_at = :past',
          ExpressionAttributeValues: { ':past': Math.floor(Date.now() / 1000) - 1 },
        }),
      );
    } finally {
      ddb.destroy();
    }
    const late = await call(gw, 'POST', `/v1/uploads/${upload.id}/complete`, { body: { part_ids: [part.id] } });
    expect(late.status, late.text).toBe(400);
    expect(errorOf(late)).toMatchObject({ param: 'upload_id', code: 'upload_not_pending' });
    expect(errorOf(late).message).toMatch(/expired/);
    await expect(addPart(upload.id, Buffer.from('x'))).rejects.toBeInstanceOf(BadRequestError);
  });
});

describe('ids', () => {
  it('unknown upload ids are 404s naming upload_id on every route', async () => {
    for (const id of ['upload_00000000000000000000000000', 'nope']) {
      for (const [path, body] of [
        [`/v1/uploads/${id}/complete`, { part_ids: ['part_00000000000000000000000000'] }],
        [`/v1/uploads/${id}/cancel`, undefined],
      ] as const) {
        const res = await call(gw, 'POST', path, body ? { body } : {});
        expect(res.status, res.text).toBe(404);
        expect(errorOf(res).param).toBe('upload_id');
      }
      await expect(addPart(id, Buffer.from('x'))).rejects.toBeInstanceOf(NotFoundError);
    }
  });

  it("another workspace's key gets 404 for an upload, and cannot use its parts", async () => {
    const upload = await newUpload(4);
    const part = await addPart(upload.id, Buffer.from('mine'));
    const theirs = client(otherKey);
    await expect(addPart(upload.id, Buffer.from('evil'), otherKey)).rejects.toBeInstanceOf(NotFoundError);
    await expect(theirs.uploads.complete(upload.id, { part_ids: [part.id] })).rejects.toBeInstanceOf(NotFoundError);
    await expect(theirs.uploads.cancel(upload.id)).rejects.toBeInstanceOf(NotFoundError);
    // Their own upload cannot take our part either.
    const own = await newUpload(4, 'user_data', otherKey);
    await expect(theirs.uploads.complete(own.id, { part_ids: [part.id] })).rejects.toBeInstanceOf(BadRequestError);
    expect((await client().uploads.complete(upload.id, { part_ids: [part.id] })).status).toBe('completed');
  });
});

describe('idempotent retries', () => {
  it('create: the same key and body answer the same upload; a part retried with its key is one part, other bytes a 422', async () => {
    const body = { bytes: 8, filename: 'idem.bin', purpose: 'user_data', mime_type: 'application/octet-stream' };
    const first = await call(gw, 'POST', '/v1/uploads', { body, headers: { 'Idempotency-Key': 'upload-create-1' } });
    const again = await call(gw, 'POST', '/v1/uploads', { body, headers: { 'Idempotency-Key': 'upload-create-1' } });
    expect(first.status, first.text).toBe(200);
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get('x-gateway-idempotent-replay')).toBe('true');
    const other = await call(gw, 'POST', '/v1/uploads', { body: { ...body, bytes: 9 }, headers: { 'Idempotency-Key': 'upload-create-1' } });
    expect(other.status).toBe(422);

    const id = first.body.id as string;
    const p1 = await addPart(id, Buffer.from('abcd'), gw.adminKey, 'part-1');
    const [r1, r2] = await Promise.all([addPart(id, Buffer.from('abcd'), gw.adminKey, 'part-1'), addPart(id, Buffer.from('abcd'), gw.adminKey, 'part-1')]);
    expect(r1.id).toBe(p1.id);
    expect(r2.id).toBe(p1.id);
    expect(await stagedKeys(id)).toHaveLength(1);
    const reused = await addPart(id, Buffer.from('wxyz'), gw.adminKey, 'part-1').catch((e: unknown) => e);
    expect((reused as { status?: number }).status).toBe(422);
    expect(await stagedKeys(id)).toHaveLength(1);
    const p2 = await addPart(id, Buffer.from('efgh'), gw.adminKey, 'part-2');
    const done = await client().uploads.complete(id, { part_ids: [p1.id, p2.id] });
    expect(await (await client().files.content(done.file!.id)).text()).toBe('abcdefgh');
  });

  it('two completes at once make one file: each answers it, or that the upload is no longer pending', async () => {
    const upload = await newUpload(6);
    const part = await addPart(upload.id, Buffer.from('racing'));
    const [a, b] = await Promise.all([
      call(gw, 'POST', `/v1/uploads/${upload.id}/complete`, { body: { part_ids: [part.id] } }),
      call(gw, 'POST', `/v1/uploads/${upload.id}/complete`, { body: { part_ids: [part.id] } }),
    ]);
    for (const r of [a, b].filter((r) => r.status !== 200)) expect(errorOf(r).code, r.text).toBe('upload_not_pending');
    const answers = [a, b].filter((r) => r.status === 200);
    expect(answers.length, `${a.text} ${b.text}`).toBeGreaterThanOrEqual(1);
    const fileIds = new Set(answers.map((r) => r.body.file.id));
    expect(fileIds.size).toBe(1);
    const fileId = [...fileIds][0];
    const named = (await client().files.list({ purpose: 'user_data' })).data.filter((f) => f.id === fileId || f.filename === 'big.bin');
    expect(named.filter((f) => f.created_at >= upload.created_at && f.bytes === 6)).toHaveLength(1);
  });
});
