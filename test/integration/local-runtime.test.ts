import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startChildGateway } from '../support/child-gateway';

const dataDir = mkdtempSync(join(tmpdir(), 'gateway-data-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** `npm start` as a user runs it: own DynamoDB Local and KMS, data under GATEWAY_DATA_DIR. */
const start = () =>
  startChildGateway(
    { adminKey: '', kmsEndpoint: '' },
    { GATEWAY_DATA_DIR: dataDir, GATEWAY_DYNAMODB_ENDPOINT: '', GATEWAY_TABLE_PREFIX: '', GATEWAY_TRUSTED_HOSTS: '' },
  );

const isRunning = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Processes whose command line names the folder (pgrep exits 1 when there are none). */
const processesUsing = (folder: string) => {
  const out = spawnSync('pgrep', ['-f', folder], { encoding: 'utf8' });
  return out.stdout.split('\n').filter(Boolean).length;
};

describe('the local runtime (npm start)', () => {
  it('bootstraps on first start, stops every child on SIGTERM/SIGINT, and reuses data and key on the next start', async () => {
    const first = await start();
    const headers = { 'x-gateway-api-key': first.adminKey, 'content-type': 'application/json' };
    const created = await fetch(`${first.url}/v1/workspaces`, { method: 'POST', headers, body: JSON.stringify({ name: 'Survives restarts' }) });
    expect(created.status).toBe(200);
    expect(statSync(join(dataDir, 'admin-key')).mode & 0o777).toBe(0o600);
    expect(processesUsing(dataDir)).toBeGreaterThan(0); // DynamoDB Local (Java) runs with -dbPath there
    await first.stop();
    expect(isRunning(first.pid)).toBe(false);
    expect(processesUsing(dataDir)).toBe(0);

    const second = await start();
    try {
      expect(second.adminKey).toBe(first.adminKey);
      const list = (await (await fetch(`${second.url}/v1/workspaces`, { headers })).json()) as { data: Array<{ slug: string }> };
      expect(list.data.map((w) => w.slug)).toEqual(['default', 'survives-restarts']);
    } finally {
      await second.stop();
    }
    // Two full boots, each with its own JVM, queues and Step Functions endpoint.
  }, 120_000);
});
