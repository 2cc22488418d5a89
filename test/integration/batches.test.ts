import OpenAI, { NotFoundError, toFile } from 'openai';
import type { Batch } from 'openai/resources/batches';
import { beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import type { FakeServer, RecordedRequest } from '../fakes';
import { useBatchFixture } from '../support/batch-fixture';
import { call, logsOf } from '../support/gateway';

// The Batches API through the official SDK, run by the gateway itself: each line through the
// pipeline (a managed OpenAI-compatible provider and a managed Anthropic provider, both on
// fakes), the output and error files read back with files.content.
const fixture = useBatchFixture('batch', 'Batches other team');
let gw: LocalGateway;
let openaiFake: FakeServer;
let claudeFake: FakeServer;
let otherKey: string;
beforeAll(() => {
  ({ gw, openaiFake, claudeFake, otherKey } = fixture);
});

const client = (provider: string, key = gw.adminKey) =>
  new OpenAI({
    baseURL: gw.baseUrl,
    apiKey: 'unused-placeholder',
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': key, 'x-gateway-provider': provider },
  });

const chatLine = (id: string, model: string, text = `say ${id}`) =>
  JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model, messages: [{ role: 'user', content: text }] } });

async function upload(openai: OpenAI, lines: string[]) {
  return openai.files.create({ file: await toFile(Buffer.from(`${lines.join('\n')}\n`), 'input.jsonl'), purpose: 'batch' });
}

const ENDED = ['completed', 'failed', 'expired', 'cancelled'];

async function until(openai: OpenAI, id: string, done: (b: Batch) => boolean, timeoutMs: number): Promise<Batch> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const batch = await openai.batches.retrieve(id);
    if (done(batch)) return batch;
    if (Date.now() > deadline) throw new Error(`batch ${id} still ${batch.status} after ${timeoutMs} ms: ${JSON.stringify(batch.request_counts)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

interface OutputLine {
  id: string;
  custom_id: string | null;
  response: { status_code: number; request_id: string; body: any } | null;
  error: { code: string; message: string } | null;
}

async function linesOf(openai: OpenAI, fileId: string | null | undefined): Promise<OutputLine[]> {
  if (!fileId) return [];
  const text = await (await openai.files.content(fileId)).text();
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as OutputLine);
}

function expectOncePerId(lines: OutputLine[]) {
  const ids = lines.map((l) => l.custom_id);
  expect(new Set(ids).size).toBe(ids.length);
}

describe('the openai SDK round trip', () => {
  it('OpenAI-backed: files.create -> batches.create -> retrieve -> files.content, bad lines in the error file naming them', async () => {
    const openai = client('@batch-openai');
    const input = await upload(openai, [
      chatLine('a', 'gpt-4o-mini'),
      '{not json',
      chatLine('b', 'gpt-4o-mini'),
      JSON.stringify({ custom_id: 'wrong-url', method: 'POST', url: '/v1/embeddings', body: { model: 'text-embedding-3-small', input: 'x' } }),
      chatLine('c', 'gpt-4o-mini'),
      chatLine('a', 'gpt-4o-mini', 'again'),
      chatLine('unknown-model', 'fail-404-no-such-model'),
    ]);
    const created = await openai.batches.create({
      input_file_id: input.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      metadata: { team: 'evals' },
    });
    expect(created).toMatchObject({
      object: 'batch',
      status: 'validating',
      input_file_id: input.id,
      endpoint: '/v1/chat/completions',
      metadata: { team: 'evals' },
    });
    expect(created.id).toMatch(/^batch_[0-9a-z]{26}$/);
    expect(created.expires_at! - created.created_at).toBe(86_400);

    const done = await until(openai, created.id, (b) => ENDED.includes(b.status), 30_000);
    expect(done.status).toBe('completed');
    expect(done.request_counts).toEqual({ total: 7, completed: 3, failed: 4 });
    expect(done.completed_at).toBeGreaterThanOrEqual(done.in_progress_at!);

    const output = await linesOf(openai, done.output_file_id);
    expect(output.map((l) => l.custom_id).sort()).toEqual(['a', 'b', 'c']);
    for (const line of output) {
      expect(line.id).toMatch(/^batch_req_/);
      expect(line.error).toBeNull();
      expect(line.response).toMatchObject({ status_code: 200, body: { object: 'chat.completion', model: 'gpt-4o-mini' } });
    }
    const errors = await linesOf(openai, done.error_file_id);
    expect(errors).toHaveLength(4);
    const byMessage = (re: RegExp) => errors.find((l) => re.test(l.error?.message ?? ''));
    expect(byMessage(/Line 2 is not valid JSON/)).toMatchObject({ custom_id: null, response: null, error: { code: 'invalid_json_line' } });
    expect(byMessage(/Line 4 has the `url` "\/v1\/embeddings"/)).toMatchObject({ custom_id: 'wrong-url', error: { code: 'mismatched_endpoint' } });
    expect(byMessage(/Line 6 repeats the `custom_id` 'a'/)).toMatchObject({ custom_id: 'a', error: { code: 'duplicate_custom_id' } });
    expect(errors.find((l) => l.custom_id === 'unknown-model')).toMatchObject({ error: null, response: { status_code: 404 } });

    expect((await openai.files.retrieve(done.output_file_id!)).purpose).toBe('batch_output');
    // Each line went through the pipeline as a request of its own, logged with the batch's id.
    const logs = await logsOf(gw, `trace_id=${output[0]!.response!.request_id}`);
    expect(logs.body.data[0]).toMatchObject({ route: 'chat.completions', metadata: { batch_id: created.id }, status: 200 });
    expect(openaiFake.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(4);
  }, 60_000);

  it('Anthropic-backed: the lines are translated to Messages and the answers back to chat completions', async () => {
    const openai = client('@batch-claude');
    const input = await upload(openai, [chatLine('x', 'claude-3-5-sonnet-latest'), chatLine('y', 'claude-3-5-sonnet-latest')]);
    const batch = await openai.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    const done = await until(openai, batch.id, (b) => ENDED.includes(b.status), 30_000);
    expect(done).toMatchObject({ status: 'completed', request_counts: { total: 2, completed: 2, failed: 0 }, error_file_id: null });
    const output = await linesOf(openai, done.output_file_id);
    expect(output.map((l) => l.custom_id).sort()).toEqual(['x', 'y']);
    for (const line of output)
      expect(line.response).toMatchObject({ status_code: 200, body: { object: 'chat.completion', choices: [{ message: { role: 'assistant' } }] } });
    expect(claudeFake.requests.filter((r) => r.path.endsWith('/messages'))).toHaveLength(2);
  }, 60_000);
});

describe('exactly once, with retries', () => {
  it('a 1,000-line batch whose provider answers some lines 429 and 500 completes with every line answered once', async () => {
    const openai = client('@batch-openai');
    const failedOnce = new Set<string>();
    openaiFake.setBehaviour({
      respond: (req: RecordedRequest) => {
        const text = (req.body as { messages?: Array<{ content?: string }> })?.messages?.[0]?.content ?? '';
        const n = Number(/line-(\d+)/.exec(text)?.[1]);
        if (Number.isNaN(n) || failedOnce.has(text)) return undefined;
        if (n % 10 === 3) {
          failedOnce.add(text);
          return { status: 429, headers: { 'retry-after': '0' }, body: { error: { message: 'slow down', type: 'rate_limit_error', param: null, code: null } } };
        }
        if (n % 10 === 7) {
          failedOnce.add(text);
          return { status: 500, body: { error: { message: 'boom', type: 'server_error', param: null, code: null } } };
        }
        return undefined;
      },
    });
    const lines = Array.from({ length: 1000 }, (_, i) => chatLine(`line-${i}`, 'gpt-4o-mini', `line-${i}`));
    const input = await upload(openai, lines);
    const batch = await openai.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    const done = await until(openai, batch.id, (b) => ENDED.includes(b.status), 240_000);
    expect(done).toMatchObject({ status: 'completed', request_counts: { total: 1000, completed: 1000, failed: 0 }, error_file_id: null });
    const output = await linesOf(openai, done.output_file_id);
    expect(output).toHaveLength(1000);
    expectOncePerId(output);
    expect(new Set(output.map((l) => l.custom_id))).toEqual(new Set(lines.map((_, i) => `line-${i}`)));
    expect(output.every((l) => l.response?.status_code === 200)).toBe(true);
    expect(failedOnce.size).toBe(200);
    // One call per line plus one per injected failure: no line was answered twice.
    expect(openaiFake.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(1200);
  }, 300_000);
});

describe('a chunk run by several workers at once (a duplicate delivery, a worker taken for dead)', () => {
  it('answers each line once: a duplicated chunk neither inflates the counts nor ends the batch before its other chunks ran', async () => {
    const openai = client('@batch-openai');
    openaiFake.setBehaviour({ latencyMs: 150 });
    // Two chunks (100 lines each at most): the first is run three times at once.
    const lines = Array.from({ length: 150 }, (_, i) => chatLine(`dup-${i}`, 'gpt-4o-mini'));
    const firstChunkBytes = Buffer.byteLength(`${lines.slice(0, 100).join('\n')}\n`);
    const input = await upload(openai, lines);
    const batch = await openai.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    await until(openai, batch.id, (b) => b.status === 'in_progress', 30_000);
    const { handler } = await import('../../functions/workers/batch-run');
    const chunk = { kind: 'chunk', workspaceId: gw.workspaceId, batchId: batch.id, chunk: 0, start: 0, end: firstChunkBytes, firstLine: 1, lastLine: 100 };
    const event = (id: string) => ({
      Records: [{ messageId: id, body: JSON.stringify(chunk), attributes: {}, eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:dup' }],
    });
    const answers = await Promise.all([handler(event('dup-a') as never), handler(event('dup-b') as never)]);
    for (const answer of answers) expect(answer.batchItemFailures).toEqual([]);
    const done = await until(openai, batch.id, (b) => ENDED.includes(b.status), 60_000);
    expect(done).toMatchObject({ status: 'completed', request_counts: { total: 150, completed: 150, failed: 0 } });
    const output = await linesOf(openai, done.output_file_id);
    expect(output).toHaveLength(150);
    expectOncePerId(output);
    // Lines were asked more than once (that is what a duplicate does), answered once.
    expect(openaiFake.requests.filter((r) => r.path.endsWith('/chat/completions')).length).toBeGreaterThan(150);
  }, 120_000);
});

describe('cancel', () => {
  it('cancelling -> cancelled within seconds, the lines answered so far in the output, each once', async () => {
    const openai = client('@batch-openai');
    openaiFake.setBehaviour({ latencyMs: 300 });
    const input = await upload(
      openai,
      Array.from({ length: 300 }, (_, i) => chatLine(`c-${i}`, 'gpt-4o-mini')),
    );
    const batch = await openai.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    await until(openai, batch.id, (b) => b.request_counts!.completed >= 10, 60_000);
    const cancelling = await openai.batches.cancel(batch.id);
    expect(['cancelling', 'cancelled']).toContain(cancelling.status);
    const asked = Date.now();
    const cancelled = await until(openai, batch.id, (b) => ENDED.includes(b.status), 15_000);
    expect(cancelled.status).toBe('cancelled');
    expect(Date.now() - asked).toBeLessThan(5_000);
    expect(cancelled.cancelling_at).not.toBeNull();
    expect(cancelled.cancelled_at).not.toBeNull();
    const output = await linesOf(openai, cancelled.output_file_id);
    expectOncePerId(output);
    expect(output.length).toBe(cancelled.request_counts!.completed);
    expect(output.length).toBeGreaterThanOrEqual(10);
    expect(output.length).toBeLessThan(300);
    // Cancelling again answers the cancelled batch; a finished batch cannot be cancelled.
    expect((await openai.batches.cancel(batch.id)).status).toBe('cancelled');
  }, 120_000);
});

describe('bad input and other workspaces', () => {
  it('unknown ids are 404s; another workspace sees neither the file nor the batch', async () => {
    const openai = client('@batch-openai');
    await expect(openai.batches.retrieve('batch_00000000000000000000000000')).rejects.toBeInstanceOf(NotFoundError);
    await expect(openai.batches.cancel('nope')).rejects.toBeInstanceOf(NotFoundError);
    await expect(
      openai.batches.create({ input_file_id: 'file-00000000000000000000000000', endpoint: '/v1/chat/completions', completion_window: '24h' }),
    ).rejects.toMatchObject({ status: 404, error: { param: 'input_file_id' } });

    const input = await upload(openai, [chatLine('a', 'gpt-4o-mini')]);
    const batch = await openai.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    const other = client('@batch-openai', otherKey);
    await expect(other.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' })).rejects.toMatchObject({
      status: 404,
    });
    await expect(other.batches.retrieve(batch.id)).rejects.toBeInstanceOf(NotFoundError);
    expect((await other.batches.list()).data).toEqual([]);
    const mine = await openai.batches.list({ limit: 100 });
    expect(mine.data.map((b) => b.id)).toContain(batch.id);
    await until(openai, batch.id, (b) => ENDED.includes(b.status), 30_000);
  }, 60_000);

  it('a bad body is a 400 naming the field', async () => {
    const openai = client('@batch-openai');
    const input = await upload(openai, [chatLine('a', 'gpt-4o-mini')]);
    for (const [body, param] of [
      [{ input_file_id: input.id, endpoint: '/v1/images/generations', completion_window: '24h' }, 'endpoint'],
      [{ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '1h' }, 'completion_window'],
      [{ endpoint: '/v1/chat/completions', completion_window: '24h' }, 'input_file_id'],
    ] as const) {
      const res = await call(gw, 'POST', '/v1/batches', { body, headers: { 'x-gateway-provider': '@batch-openai' } });
      expect(res.status, res.text).toBe(400);
      expect(res.body.error.param).toBe(param);
    }
    const notBatch = await openai.files.create({ file: await toFile(Buffer.from('hello'), 'a.txt'), purpose: 'user_data' });
    const res = await call(gw, 'POST', '/v1/batches', {
      body: { input_file_id: notBatch.id, endpoint: '/v1/chat/completions', completion_window: '24h' },
      headers: { 'x-gateway-provider': '@batch-openai' },
    });
    expect(res.status, res.text).toBe(400);
    expect(res.body.error).toMatchObject({ param: 'input_file_id', code: 'invalid_value' });
  });
});
