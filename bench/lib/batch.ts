/**
 * Issue 35: how fast the gateway's own batch engine answers lines. A batch of chat lines
 * goes in through the Files API, `POST /v1/batches` runs it on the local runtime's queue
 * and workers (the same engine as on AWS), against the fake OpenAI at 0 ms; the time is
 * from the create call to `completed`. The DynamoDB writes per line (line records, counts,
 * request logs, counters) come from a second batch behind the heat recorder.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { api } from './admin';
import { summariseHeat, type HeatTargetTotals } from './heat';
import { startHeatRecorder } from './heat-recorder';
import { round } from './load';

export interface BatchResult {
  lines: number;
  /** From `POST /v1/batches` to `completed`. */
  seconds: number;
  linesPerSecond: number;
  /** GATEWAY_BATCH_CONCURRENCY: lines in flight at once for the workspace. */
  concurrency: number;
  status: string;
  requestCounts: { total: number; completed: number; failed: number };
  /** From `POST /v1/batches` to `in_progress` (validation: the input read and cut into chunks). */
  validatingSeconds: number;
  /** Lines of the second batch, run behind the heat recorder, that the writes per line come from. */
  writesLines: number;
  writesPerLine: number;
  unitsPerLine: number;
  byTarget: Record<string, HeatTargetTotals>;
}

export interface BatchPhaseDeps {
  dynamoEndpoint: string;
  upstreamUrl: string;
  startGateway: (opts: {
    name: string;
    dynamodbEndpoint: string;
    env?: Record<string, string>;
  }) => Promise<{ url: string; adminKey: string; stop(): Promise<void> }>;
  lines: number;
  /** Lines of the batch run behind the heat recorder (at most `lines`). */
  writesLines: number;
  concurrency: number;
  timeoutMs: number;
}

type Batch = { id: string; status: string; request_counts?: { total: number; completed: number; failed: number } };
const DONE = new Set(['completed', 'failed', 'expired', 'cancelled']);

/** Upload `lines` chat lines, create the batch and poll it to the end; times from the create call. */
async function runOneBatch(gw: { url: string; adminKey: string }, upstreamUrl: string, lines: number, timeoutMs: number, onCreate = () => {}) {
  await api(gw.url, gw.adminKey, 'POST', '/v1/providers', {
    slug: 'batch-openai',
    provider: 'openai',
    api_key: 'sk-bench-provider-key-0123456789',
    custom_host: `${upstreamUrl}/v1`,
  });
  const jsonl = Array.from({ length: lines }, (_, i) =>
    JSON.stringify({
      custom_id: `line-${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `Summarise line ${i} of the benchmark batch in one sentence` }] },
    }),
  ).join('\n');
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([`${jsonl}\n`], { type: 'application/jsonl' }), 'bench-batch.jsonl');
  const uploaded = await fetch(`${gw.url}/v1/files`, { method: 'POST', headers: { 'x-gateway-api-key': gw.adminKey }, body: form });
  const file = (await uploaded.json()) as { id?: string };
  if (!uploaded.ok || !file.id) throw new Error(`upload -> ${uploaded.status}: ${JSON.stringify(file)}`);

  onCreate();
  const started = performance.now();
  const create = await fetch(`${gw.url}/v1/batches`, {
    method: 'POST',
    headers: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': '@batch-openai', 'content-type': 'application/json' },
    body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }),
  });
  let batch = (await create.json()) as Batch;
  if (!create.ok) throw new Error(`POST /v1/batches -> ${create.status}: ${JSON.stringify(batch)}`);
  let inProgressAt = Number.NaN;
  while (!DONE.has(batch.status)) {
    if (performance.now() - started > timeoutMs) throw new Error(`batch still ${batch.status} after ${timeoutMs} ms: ${JSON.stringify(batch.request_counts)}`);
    await sleep(200);
    batch = await api<Batch>(gw.url, gw.adminKey, 'GET', `/v1/batches/${batch.id}`);
    if (Number.isNaN(inProgressAt) && batch.status !== 'validating') inProgressAt = performance.now();
  }
  return { batch, seconds: (performance.now() - started) / 1000, validatingSeconds: (inProgressAt - started) / 1000 };
}

/**
 * The timed batch runs on a gateway talking to DynamoDB Local directly (the recorder's
 * extra reads would slow it); a second, smaller batch on a gateway behind the heat recorder
 * gives the writes per line.
 */
export async function runBatchPhase(d: BatchPhaseDeps): Promise<BatchResult> {
  const env = { GATEWAY_BATCH_CONCURRENCY: String(d.concurrency) };
  const timed = await d.startGateway({ name: 'batch', dynamodbEndpoint: d.dynamoEndpoint, env });
  const run = await runOneBatch(timed, d.upstreamUrl, d.lines, d.timeoutMs).finally(() => timed.stop());

  const recorder = await startHeatRecorder(d.dynamoEndpoint, 'bench-batch-writes-');
  const recorded = await d.startGateway({ name: 'batch-writes', dynamodbEndpoint: recorder.endpoint, env });
  try {
    const lines = Math.min(d.lines, d.writesLines);
    await runOneBatch(recorded, d.upstreamUrl, lines, d.timeoutMs, () => {
      recorder.recording = true;
    });
    // The last lines' request-log records and held counters land after the batch completes.
    await sleep(2000);
    recorder.recording = false;
    const writes = summariseHeat(recorder.writes, lines);
    return {
      lines: d.lines,
      seconds: round(run.seconds, 1),
      linesPerSecond: round(d.lines / run.seconds, 1),
      concurrency: d.concurrency,
      status: run.batch.status,
      requestCounts: run.batch.request_counts ?? { total: 0, completed: 0, failed: 0 },
      validatingSeconds: round(run.validatingSeconds, 1),
      writesLines: lines,
      writesPerLine: writes.writesPerRequest,
      unitsPerLine: writes.unitsPerRequest,
      byTarget: writes.byTarget,
    };
  } finally {
    await recorded.stop();
    await recorder.stop();
  }
}

export function renderBatch(b: BatchResult): string {
  const head = [
    'lines',
    'concurrency (GATEWAY_BATCH_CONCURRENCY)',
    'status',
    'completed / failed',
    'seconds (create -> completed)',
    'validating s',
    'lines/s',
    'writes/line',
    'WCU/line',
  ];
  const row = [
    b.lines,
    b.concurrency,
    b.status,
    `${b.requestCounts.completed} / ${b.requestCounts.failed}`,
    b.seconds,
    b.validatingSeconds,
    b.linesPerSecond,
    b.writesPerLine,
    b.unitsPerLine,
  ];
  const byTarget = Object.entries(b.byTarget).map(([t, v]) => `| ${t} | ${v.writesPerRequest} | ${v.unitsPerRequest} | ${v.avgItemBytes} |`);
  return [
    `| ${head.join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
    `| ${row.join(' | ')} |`,
    '',
    `DynamoDB writes per line, by table and index (a second batch of ${b.writesLines} lines behind the heat recorder):`,
    '',
    '| table/index | writes/line | WCU/line | avg item B |',
    '|---|---|---|---|',
    ...byTarget,
  ].join('\n');
}
