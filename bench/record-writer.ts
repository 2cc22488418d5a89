/**
 * The machine's share of the p99, measured on the floor: writes request-log records to
 * DynamoDB Local at RECORDS_PER_S, each through the gateway's own writer (the record's item
 * as `functions/gateway/request-log.ts` stores it, grouped by `batchedPuts` with the local
 * runtime's wait), so the bare proxy can be timed beside the same storage work the gateway
 * causes. Needs the tables of TABLE_PREFIX; prints `{"ready":true}` and writes until killed.
 */
import { TABLE_SPECS } from '../infra/tables';

const rate = Number(process.env.RECORDS_PER_S);
if (!(rate > 0)) throw new Error('RECORDS_PER_S must be a positive number');
const prefix = process.env.TABLE_PREFIX ?? 'floor-';
// DynamoDB Local at AWS_ENDPOINT_URL_DYNAMODB takes any credentials.
process.env.AWS_REGION ??= 'us-east-1';
process.env.AWS_ACCESS_KEY_ID ??= 'local';
process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
Object.assign(process.env, Object.fromEntries(TABLE_SPECS.map((t) => [t.envVar, `${prefix}${t.name}`])));

const { batchedPuts } = await import('../functions/shared/db/batched-puts');
const { requestLogItem } = await import('../functions/gateway/request-log');
const { ID_PREFIX, newId } = await import('../functions/shared/ids');
const { createTables } = await import('../infra/local/dynamodb');

await createTables(process.env.AWS_ENDPOINT_URL_DYNAMODB!, Object.fromEntries(TABLE_SPECS.map((t) => [t.name, `${prefix}${t.name}`])));
const waitMs = Number(process.env.REQUEST_LOG_BATCH_WAIT_MS ?? 0);
const put = batchedPuts('logs', { waitMs: () => waitMs });

/** What the gateway logs for one generic-proxy request of the benchmark. */
function record() {
  const id = newId(ID_PREFIX.log);
  return requestLogItem({
    object: 'request_log',
    id,
    trace_id: id.slice(-20),
    workspace_id: 'ws_bench_floor',
    organisation_id: 'org_bench_floor',
    api_key_id: 'key_bench_floor',
    method: 'POST',
    path: '/v1/v1/chat/completions',
    route: 'proxy',
    provider: 'openai',
    managed_provider: null,
    model: 'gpt-4o-mini',
    status: 200,
    stream: false,
    latency_ms: 1,
    upstream_latency_ms: 1,
    usage: { prompt_tokens: 21, completion_tokens: 14, total_tokens: 35 },
    cache_status: null,
    retry_count: 0,
    attempts: [{ path: 'config', provider: 'openai', attempt: 1, status: 200, latency_ms: 1 }],
    metadata: {},
    error: null,
    cost_usd: 0.0000116,
    price_source: 'catalogue',
    pricing_unknown: false,
    created_at: Math.floor(Date.now() / 1000),
  });
}

process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
const interval = 1000 / rate;
const start = performance.now();
for (let i = 0; ; i++) {
  const wait = start + i * interval - performance.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  put(record()).catch((err: Error) => process.stderr.write(`record-writer: ${err.message}\n`));
}
