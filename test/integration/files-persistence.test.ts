import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { NotFoundError, toFile } from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { startOwnDataGateway, type OwnDataGateway } from '../support/own-data-gateway';

// `npm start` with a data folder keeps uploaded files' bytes there (infra/local/s3-store.ts),
// as DynamoDB Local keeps their records: a file outlives a `kill -9` and a restart.
const dataDir = mkdtempSync(join(tmpdir(), 'gateway-files-'));
const running: OwnDataGateway[] = [];

afterAll(async () => {
  for (const gw of running) await gw.kill();
  rmSync(dataDir, { recursive: true, force: true });
});

async function start(): Promise<{ gw: OwnDataGateway; openai: OpenAI }> {
  const gw = await startOwnDataGateway(dataDir);
  running.push(gw);
  return { gw, openai: new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.adminKey, maxRetries: 0, timeout: 60_000 }) };
}

const storedObjects = () => readdirSync(join(dataDir, 's3'), { recursive: true }).map(String);

describe('local S3 persistence', () => {
  it('a small and a multipart-sized file read back byte-identical after kill -9 and a restart; a delete removes the bytes from disk', async () => {
    const small = Buffer.from('kept across restarts\n');
    const large = randomBytes(6 * 1024 * 1024 + 7); // above one S3 part: a multipart upload
    const first = await start();
    const a = await first.openai.files.create({ file: await toFile(small, 'small.txt'), purpose: 'user_data' });
    const b = await first.openai.files.create({ file: await toFile(large, 'large.bin'), purpose: 'assistants' });
    await first.gw.kill();

    const second = await start();
    expect(await (await second.openai.files.content(a.id)).text()).toBe(small.toString());
    expect(Buffer.from(await (await second.openai.files.content(b.id)).arrayBuffer()).equals(large)).toBe(true);

    expect(storedObjects().some((name) => name.includes(a.id))).toBe(true);
    await second.openai.files.delete(a.id);
    await expect(second.openai.files.content(a.id)).rejects.toBeInstanceOf(NotFoundError);
    expect(storedObjects().some((name) => name.includes(a.id))).toBe(false);
    expect(storedObjects().some((name) => name.includes(b.id))).toBe(true);
  }, 300_000);
});
