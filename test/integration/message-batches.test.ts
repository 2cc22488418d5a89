import Anthropic, { NotFoundError } from '@anthropic-ai/sdk';
import type { MessageBatch, MessageBatchIndividualResponse } from '@anthropic-ai/sdk/resources/messages/batches';
import { beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import type { FakeServer } from '../fakes';
import { useBatchFixture } from '../support/batch-fixture';
import { call, logsOf } from '../support/gateway';

// Anthropic's Message Batches API through Anthropic's own SDK, run by the gateway's batch
// engine on any provider: an OpenAI-backed managed provider (each request translated to chat
// and its answer back to an Anthropic message) and an Anthropic-backed one.
const fixture = useBatchFixture('mb', 'Message batches other team');
let gw: LocalGateway;
let openaiFake: FakeServer;
let claudeFake: FakeServer;
let otherKey: string;
beforeAll(() => {
  ({ gw, openaiFake, claudeFake, otherKey } = fixture);
});

/** The gateway key where Anthropic's SDK puts its key (`x-api-key`), as an Anthropic client would send it. */
const client = (provider: string, key = gw.adminKey) =>
  new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0, defaultHeaders: { 'x-gateway-provider': provider } });

const request = (custom_id: string, model: string, text = `say ${custom_id}`) => ({
  custom_id,
  params: { model, max_tokens: 100, messages: [{ role: 'user' as const, content: text }] },
});

async function until(anthropic: Anthropic, id: string, done: (b: MessageBatch) => boolean, timeoutMs: number): Promise<MessageBatch> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const batch = await anthropic.messages.batches.retrieve(id);
    if (done(batch)) return batch;
    if (Date.now() > deadline) throw new Error(`batch ${id} still ${batch.processing_status} after ${timeoutMs} ms: ${JSON.stringify(batch.request_counts)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
const ended = (b: MessageBatch) => b.processing_status === 'ended';

async function resultsOf(anthropic: Anthropic, id: string): Promise<MessageBatchIndividualResponse[]> {
  const lines: MessageBatchIndividualResponse[] = [];
  for await (const line of await anthropic.messages.batches.results(id)) lines.push(line);
  return lines;
}

describe("Anthropic's SDK round trip", () => {
  it('OpenAI-backed: create -> retrieve -> list -> results (real Anthropic messages, an errored line) -> delete', async () => {
    const anthropic = client('@mb-openai');
    const created = await anthropic.messages.batches.create({
      requests: [request('first', 'gpt-4o-mini'), request('refused', 'fail-400-model'), request('second', 'gpt-4o-mini')],
    });
    expect(created).toMatchObject({
      type: 'message_batch',
      processing_status: 'in_progress',
      request_counts: { processing: 3, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
      ended_at: null,
      archived_at: null,
      cancel_initiated_at: null,
      results_url: null,
    });
    expect(created.id).toMatch(/^msgbatch_[0-9a-z]{26}$/);
    expect(Date.parse(created.expires_at) - Date.parse(created.created_at)).toBe(86_400_000);
    expect(created.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);

    const done = await until(anthropic, created.id, ended, 30_000);
    expect(done.request_counts).toEqual({ processing: 0, succeeded: 2, errored: 1, canceled: 0, expired: 0 });
    expect(Date.parse(done.ended_at!)).toBeGreaterThanOrEqual(Date.parse(done.created_at));
    // The results URL is the gateway's own route, and the SDK reads it with the same key header.
    expect(done.results_url).toBe(`${gw.url}/v1/messages/batches/${created.id}/results`);

    const results = await resultsOf(anthropic, created.id);
    expect(results.map((r) => r.custom_id)).toEqual(['first', 'refused', 'second']);
    for (const [i, said] of [
      [0, 'echo: say first'],
      [2, 'echo: say second'],
    ] as const) {
      expect(results[i]!.result).toMatchObject({
        type: 'succeeded',
        message: { type: 'message', role: 'assistant', model: 'gpt-4o-mini', content: [{ type: 'text', text: said }], stop_reason: 'end_turn' },
      });
      const message = (results[i]!.result as { message: { id: string; usage: { input_tokens: number } } }).message;
      expect(message.id).toMatch(/^msg_/);
      expect(message.usage.input_tokens).toBeGreaterThan(0);
    }
    const refused = results[1]!.result;
    expect(refused).toMatchObject({ type: 'errored', error: { type: 'error', error: { type: 'invalid_request_error' } } });
    // Each request went through the pipeline, logged with the batch's id.
    const requestId = (refused as { error: { request_id: string } }).error.request_id;
    const logs = await logsOf(gw, `trace_id=${requestId}`);
    expect(logs.body.data[0]).toMatchObject({ route: 'messages', metadata: { batch_id: created.id }, status: 400 });
    expect(openaiFake.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(3);

    // Listed with Anthropic's paging, and not among the Batches API's batches.
    const listed = await anthropic.messages.batches.list({ limit: 100 });
    expect(listed.data.map((b) => b.id)).toContain(created.id);
    const openaiList = await call(gw, 'GET', '/v1/batches?limit=100');
    expect(openaiList.body.data.map((b: { id: string }) => b.id)).not.toContain(created.id);

    const deleted = await anthropic.messages.batches.delete(created.id);
    expect(deleted).toEqual({ id: created.id, type: 'message_batch_deleted' });
    await expect(anthropic.messages.batches.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
    const files = await call(gw, 'GET', '/v1/files?limit=100');
    expect(files.body.data.map((f: { filename: string }) => f.filename).filter((n: string) => n.startsWith(created.id))).toEqual([]);
  }, 60_000);

  it('Anthropic-backed, with the key in x-gateway-api-key: the requests reach Anthropic as Messages requests', async () => {
    const anthropic = new Anthropic({
      baseURL: gw.url,
      apiKey: 'unused-placeholder',
      maxRetries: 0,
      defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': '@mb-claude' },
    });
    const batch = await anthropic.messages.batches.create({ requests: [request('x', 'claude-3-5-sonnet-latest'), request('y', 'claude-3-5-sonnet-latest')] });
    const done = await until(anthropic, batch.id, ended, 30_000);
    expect(done.request_counts).toEqual({ processing: 0, succeeded: 2, errored: 0, canceled: 0, expired: 0 });
    const results = await resultsOf(anthropic, batch.id);
    expect(results.map((r) => r.custom_id)).toEqual(['x', 'y']);
    for (const r of results)
      expect(r.result).toMatchObject({ type: 'succeeded', message: { type: 'message', role: 'assistant', content: [{ type: 'text' }] } });
    const sent = claudeFake.requests.filter((r) => r.path.endsWith('/messages'));
    expect(sent).toHaveLength(2);
    // The placeholder key was never stored with the batch: the managed provider's key went upstream.
    for (const r of sent) expect(r.headers['x-api-key']).toBe('sk-managed');
  }, 60_000);
});

describe('a raw provider key', () => {
  it("goes to the provider's own Message Batches API, unchanged", async () => {
    const body = { requests: [request('own', 'claude-3-5-sonnet-latest')] };
    const res = await call(gw, 'POST', '/v1/messages/batches', {
      body,
      headers: { 'x-gateway-provider': 'anthropic', 'x-gateway-custom-host': `${claudeFake.url}/v1`, authorization: 'Bearer sk-ant-own-key' },
    });
    expect(claudeFake.count(), res.text).toBe(1);
    expect(claudeFake.last()).toMatchObject({ method: 'POST', path: '/v1/messages/batches', body });
    expect(claudeFake.last()!.headers['x-api-key']).toBe('sk-ant-own-key');
    expect((await call(gw, 'GET', '/v1/messages/batches?limit=1000')).body.data.some((b: { id: string }) => b.id === res.body?.id)).toBe(false);
  });
});

describe('cancel', () => {
  it('canceling -> ended within seconds: the unanswered requests are canceled results, every custom_id once', async () => {
    const anthropic = client('@mb-openai');
    openaiFake.setBehaviour({ latencyMs: 300 });
    const requests = Array.from({ length: 300 }, (_, i) => request(`c-${i}`, 'gpt-4o-mini'));
    const batch = await anthropic.messages.batches.create({ requests });
    const running = await until(anthropic, batch.id, (b) => b.request_counts.succeeded >= 5, 60_000);
    expect(running.processing_status).toBe('in_progress');
    expect(running.request_counts.processing).toBe(300 - running.request_counts.succeeded - running.request_counts.errored);
    // An unended batch keeps its results and cannot be deleted.
    await expect(anthropic.messages.batches.results(batch.id)).rejects.toThrow(/Has it finished processing/);
    await expect(anthropic.messages.batches.delete(batch.id)).rejects.toMatchObject({
      status: 409,
      error: { type: 'error', error: { type: 'invalid_request_error' } },
    });

    const canceling = await anthropic.messages.batches.cancel(batch.id);
    expect(['canceling', 'ended']).toContain(canceling.processing_status);
    expect(canceling.cancel_initiated_at).not.toBeNull();
    const asked = Date.now();
    const done = await until(anthropic, batch.id, ended, 15_000);
    expect(Date.now() - asked).toBeLessThan(5_000);
    const counts = done.request_counts;
    expect(counts.processing).toBe(0);
    expect(counts.expired).toBe(0);
    expect(counts.canceled).toBeGreaterThan(0);
    expect(counts.succeeded).toBeGreaterThanOrEqual(5);
    expect(counts.succeeded + counts.errored + counts.canceled).toBe(300);

    const results = await resultsOf(anthropic, batch.id);
    expect(results.map((r) => r.custom_id)).toEqual(requests.map((r) => r.custom_id));
    expect(results.filter((r) => r.result.type === 'canceled')).toHaveLength(counts.canceled);
    expect(results.filter((r) => r.result.type === 'succeeded')).toHaveLength(counts.succeeded);
    // Cancelling again answers the ended batch as it is.
    expect((await anthropic.messages.batches.cancel(batch.id)).processing_status).toBe('ended');
  }, 120_000);
});

describe('bad input and other workspaces', () => {
  it('is a 400 in Anthropic shape naming the field', async () => {
    const longId = 'x'.repeat(65);
    for (const [body, field] of [
      [{ requests: [] }, '`requests`'],
      [{}, '`requests`'],
      [{ requests: [request('same', 'gpt-4o-mini'), request('same', 'gpt-4o-mini')] }, '`requests[1].custom_id`'],
      [{ requests: [{ ...request('s', 'gpt-4o-mini'), params: { ...request('s', 'gpt-4o-mini').params, stream: true } }] }, '`requests[0].params.stream`'],
      [{ requests: [request(longId, 'gpt-4o-mini')] }, '`requests[0].custom_id`'],
      [{ requests: [request('bad id!', 'gpt-4o-mini')] }, '`requests[0].custom_id`'],
      [{ requests: [{ custom_id: 'm', params: { max_tokens: 5, messages: [] } }] }, '`requests[0].params.model`'],
    ] as const) {
      const res = await call(gw, 'POST', '/v1/messages/batches', { body, headers: { 'x-gateway-provider': '@mb-openai' } });
      expect(res.status, res.text).toBe(400);
      expect(res.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
      expect(res.body.error.message, JSON.stringify(body).slice(0, 80)).toContain(field);
    }
    // The kernel's own refusals are in Anthropic's shape on these routes too.
    const anonymous = await call(gw, 'GET', '/v1/messages/batches', { key: null });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
  });

  it('a create retried with its Idempotency-Key answers the same batch and runs it once', async () => {
    const anthropic = client('@mb-openai');
    const body = { requests: [request('once', 'gpt-4o-mini')] };
    const headers = { 'Idempotency-Key': `mb-${Date.now()}` };
    const first = await anthropic.messages.batches.create(body, { headers });
    const again = await anthropic.messages.batches.create(body, { headers });
    expect(again.id).toBe(first.id);
    await until(anthropic, first.id, ended, 30_000);
    expect(openaiFake.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(1);
  }, 60_000);

  it('unknown ids and another workspace’s batches are 404s', async () => {
    const anthropic = client('@mb-openai');
    await expect(anthropic.messages.batches.retrieve('msgbatch_00000000000000000000000000')).rejects.toBeInstanceOf(NotFoundError);
    await expect(anthropic.messages.batches.cancel('nope')).rejects.toBeInstanceOf(NotFoundError);
    const unknown = await call(gw, 'GET', '/v1/messages/batches/msgbatch_00000000000000000000000000/results');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });

    const batch = await anthropic.messages.batches.create({ requests: [request('mine', 'gpt-4o-mini')] });
    const other = client('@mb-openai', otherKey);
    await expect(other.messages.batches.retrieve(batch.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(other.messages.batches.cancel(batch.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(other.messages.batches.delete(batch.id)).rejects.toBeInstanceOf(NotFoundError);
    expect((await other.messages.batches.list()).data).toEqual([]);
    await until(anthropic, batch.id, ended, 30_000);
    await expect(other.messages.batches.results(batch.id)).rejects.toBeInstanceOf(NotFoundError);
  }, 60_000);

  it('pages as Anthropic does: newest first, after_id to older batches, before_id to newer ones', async () => {
    const anthropic = client('@mb-openai', otherKey);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await anthropic.messages.batches.create({ requests: [request(`p${i}`, 'gpt-4o-mini')] })).id);
    const newestFirst = [...ids].reverse();
    const first = await anthropic.messages.batches.list({ limit: 2 });
    expect(first.data.map((b) => b.id)).toEqual(newestFirst.slice(0, 2));
    expect(first).toMatchObject({ has_more: true, first_id: newestFirst[0], last_id: newestFirst[1] });
    const older = await anthropic.messages.batches.list({ limit: 2, after_id: newestFirst[1] });
    expect(older.data.map((b) => b.id)).toEqual([newestFirst[2]]);
    expect(older.has_more).toBe(false);
    const newer = await anthropic.messages.batches.list({ limit: 1, before_id: newestFirst[2] });
    expect(newer.data.map((b) => b.id)).toEqual([newestFirst[1]]);
    expect(newer.has_more).toBe(true);
    const all: string[] = [];
    for await (const b of anthropic.messages.batches.list({ limit: 1 })) all.push(b.id);
    expect(all).toEqual(newestFirst);
    for (const id of ids) await until(anthropic, id, ended, 30_000);
  }, 60_000);
});
