import { Writable } from 'node:stream';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, startTestGateway } from '../support/gateway';
import { startSlowDynamoDb } from '../support/slow-dynamodb';

// On Lambda on demand an execution environment serves one invocation at a time and may be
// frozen as soon as it ends: the invocation must not end before the request's log record
// and its charges (spend counter, budget) are written, although the answer does not wait
// for them. The gateway's DynamoDB is behind a proxy that answers writes late; the Lambda
// entry is invoked directly, as the Lambda runtime does.

const DELAY_MS = 1000;

/** The response stream the Lambda runtime hands the entry: notes when the answer ended. */
class ResponseStream extends Writable {
  metadata: { statusCode?: number } = {};
  body = '';
  endedAt = 0;
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.body += chunk.toString();
    done();
  }
  override _final(done: () => void): void {
    this.endedAt = performance.now();
    done();
  }
}

let proxy: Awaited<ReturnType<typeof startSlowDynamoDb>>;
let gw: LocalGateway;
let fake: FakeServer;

beforeAll(async () => {
  proxy = await startSlowDynamoDb(inject('dynamodbEndpoint'), DELAY_MS);
  fake = await startOpenAIFake();
  gw = await startTestGateway({ dynamodbEndpoint: proxy.url });
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
  await proxy?.close();
});

describe('an invocation alone in its execution environment (Lambda on demand)', () => {
  it('ends only once its log record, spend counter and budget charge are written; its answer does not wait for them', async () => {
    const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'on demand', scopes: ['gateway'] } });
    const model = `on-demand-${Date.now()}`;
    expect((await call(gw, 'POST', '/v1/prices', { body: { provider: 'openai', model, per_request: 0.001 } })).status).toBe(200);
    const budget = await call(gw, 'POST', '/v1/policies/budgets', {
      body: { type: 'budget', name: 'on demand', limit_usd: 10, period: 'day', conditions: [{ key: 'api_key', value: key.body.id }] },
    });
    expect(budget.status).toBe(200);

    const { handler } = (await import('../../functions/gateway/handler')) as unknown as {
      handler: (event: APIGatewayProxyEvent, stream: Writable, context: unknown) => Promise<void>;
    };
    const body = JSON.stringify({ model, messages: [{ role: 'user', content: 'on demand' }] });
    const event = {
      httpMethod: 'POST',
      path: '/v1/chat/completions',
      headers: {
        'content-type': 'application/json',
        'x-gateway-api-key': key.body.secret,
        'x-gateway-provider': 'openai',
        'x-gateway-custom-host': `${fake.url}/v1`,
        authorization: 'Bearer sk-test',
      },
      multiValueHeaders: {},
      queryStringParameters: null,
      multiValueQueryStringParameters: null,
      body: Buffer.from(body).toString('base64'),
      isBase64Encoded: true,
      requestContext: { requestId: 'on-demand', identity: { sourceIp: '127.0.0.1' } },
    } as unknown as APIGatewayProxyEvent;
    const stream = new ResponseStream();

    proxy.state.slow = true;
    await handler(event, stream, {});
    const invocationEndedAt = performance.now();
    proxy.state.slow = false;

    expect(stream.metadata.statusCode).toBe(200);
    const written = (operation: string, text: string) => proxy.state.answered.find((a) => a.operation === operation && a.body.includes(text));
    const record = written('BatchWriteItem', model);
    const counter = written('UpdateItem', '#SPEND#'); // a cell counter's shard: `#SPEND#cell` or `#SPEND#<n>#cell`
    const charge = written('UpdateItem', `#BUD#${budget.body.id}`);
    expect(record, 'the log record was written').toBeDefined();
    expect(counter, 'the spend counter was written').toBeDefined();
    expect(charge, 'the budget charge was written').toBeDefined();
    // The answer ended before the slow writes were answered; the invocation after all of them.
    for (const write of [record!, counter!, charge!]) {
      expect(stream.endedAt).toBeLessThan(write.at);
      expect(invocationEndedAt).toBeGreaterThanOrEqual(write.at);
    }
    expect(invocationEndedAt - stream.endedAt).toBeGreaterThanOrEqual(DELAY_MS * 0.9);
  }, 60_000);
});
