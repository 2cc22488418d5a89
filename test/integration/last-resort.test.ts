import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startChildGateway } from '../support/child-gateway';
import { startTestGateway } from '../support/gateway';

// The last-resort handler (functions/shared/telemetry/last-resort.ts): an error thrown in a
// stray callback, or a promise rejected with nobody listening, is logged and the gateway
// keeps serving. The gateway runs in a child process (a crash must not take the test
// runner with it), with a preload that makes such errors on SIGUSR2.

let gw: LocalGateway;
let child: Awaited<ReturnType<typeof startChildGateway>> | undefined;

beforeAll(async () => {
  gw = await startTestGateway();
  child = await startChildGateway(gw, {
    NODE_OPTIONS: `--import ${pathToFileURL(resolve(import.meta.dirname, '../support/stray-throw.mjs')).href}`,
  });
}, 90_000);
afterAll(async () => {
  await child?.stop();
  await gw?.stop();
});

it('a stray throw and an unhandled rejection are logged, and the gateway keeps serving', async () => {
  const before = await fetch(`${child!.url}/v1/logs?limit=1`, { headers: { 'x-gateway-api-key': child!.adminKey } });
  expect(before.status).toBe(200);

  process.kill(child!.pid, 'SIGUSR2');
  const deadline = Date.now() + 5000;
  while (!/unhandled promise rejection/.test(child!.output()) || !/uncaught exception/.test(child!.output())) {
    if (Date.now() > deadline || !child!.alive()) break;
    await new Promise((r) => setTimeout(r, 50));
  }

  expect(child!.alive()).toBe(true);
  const lines = child!
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: string; message: string; error?: { message?: string } });
  expect(lines).toContainEqual(
    expect.objectContaining({
      level: 'ERROR',
      message: expect.stringContaining('uncaught exception'),
      error: expect.objectContaining({ message: 'stray timer failure' }),
    }),
  );
  expect(lines).toContainEqual(
    expect.objectContaining({
      level: 'ERROR',
      message: expect.stringContaining('unhandled promise rejection'),
      error: expect.objectContaining({ message: 'stray rejection' }),
    }),
  );

  const after = await fetch(`${child!.url}/v1/logs?limit=1`, { headers: { 'x-gateway-api-key': child!.adminKey } });
  expect(after.status).toBe(200);
});
