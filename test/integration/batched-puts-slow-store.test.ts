import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startTestGateway } from '../support/gateway';
import { startSlowDynamoDb } from '../support/slow-dynamodb';

// What a crash can lose of the request log is what the gateway has not sent yet: a record
// must not wait for another group's slow write, only for its own grouping wait
// (functions/shared/db/batched-puts.ts). DynamoDB answers writes 2 s late here.

const DELAY_MS = 2000;
const WAIT_MS = 20;

let proxy: Awaited<ReturnType<typeof startSlowDynamoDb>>;
let gw: LocalGateway;
let batchedPuts: typeof import('../../functions/shared/db/batched-puts').batchedPuts;

beforeAll(async () => {
  proxy = await startSlowDynamoDb(inject('dynamodbEndpoint'), DELAY_MS);
  gw = await startTestGateway({ dynamodbEndpoint: proxy.url });
  ({ batchedPuts } = await import('../../functions/shared/db/batched-puts'));
});
afterAll(async () => {
  await gw?.stop();
  await proxy?.close();
});

describe('batchedPuts with a slow store', () => {
  it('sends a group once its wait is over, while an earlier group is still being written', async () => {
    const put = batchedPuts('logs', { waitMs: () => WAIT_MS });
    const pk = `TEST#slow#${Date.now()}`;
    proxy.state.slow = true;
    const first = put({ pk, sk: 'item-first' });
    while (!proxy.state.received.some((r) => r.body.includes('item-first'))) await new Promise((r) => setTimeout(r, 10));
    const queuedAt = performance.now();
    const second = put({ pk, sk: 'item-second' });
    await Promise.all([first, second]);
    proxy.state.slow = false;

    const sent = proxy.state.received.find((r) => r.body.includes('item-second'))!;
    const firstAnswered = proxy.state.answered.find((r) => r.body.includes('item-first'))!;
    // Sent after its own wait (bounded generously for a loaded machine), not after the first write's answer.
    expect(sent.at - queuedAt).toBeLessThan(DELAY_MS / 2);
    expect(sent.at).toBeLessThan(firstAnswered.at);
  }, 30_000);
});
