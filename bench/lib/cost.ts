import { createServer, request as httpRequest, type Server } from 'node:http';
import { statSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  assistantRunsCost,
  breakEvenRps,
  managedInstancesCost,
  onDemandCost,
  processingMs,
  rightSizeMemory,
  type ManagedInstancesCost,
  type ManagedInstancesSettings,
  type MeasuredInputs,
  type ModeCost,
  type RunShape,
  type OnDemandCost,
  type OnDemandSettings,
} from '../../infra/cost/model';
import { PRICES_AS_OF, REGION } from '../../infra/cost/prices';
import { runsDefinition } from '../../infra/workflows/runs';
import { growthTables, renderGrowth, type GrowthResults } from './cost-growth';
import { api, setUpLimitedChat } from './admin';
import { runLoad, round } from './load';
import { cpuMs, type ChildGateway } from './procs';
import { PROVIDER_KEY } from './scenarios';

/**
 * DynamoDB capacity units as DynamoDB bills them: a pass-through HTTP proxy in front of
 * DynamoDB Local that asks for `ReturnConsumedCapacity: TOTAL` on every data-plane call and
 * adds up the units in the answers (DynamoDB Local computes them from item sizes as
 * DynamoDB does: 1 WRU per KB written, 2 for a transactional write, 0.5 RRU per 4 KB of an
 * eventually consistent read). The gateway under test talks to the proxy instead of the
 * emulator; nothing in functions/ knows.
 */
export interface CapacityCounter {
  endpoint: string;
  /** Totals, calls by operation, and units by table or `table/index` (write and read). */
  units: { read: number; write: number; calls: Record<string, number>; byTarget: Record<string, number> };
  stop(): Promise<void>;
}

const READ_OPS = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan', 'TransactGetItems']);
const WRITE_OPS = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);

export async function startCapacityCounter(target: string): Promise<CapacityCounter> {
  const upstream = new URL(target);
  const units = { read: 0, write: 0, calls: {} as Record<string, number>, byTarget: {} as Record<string, number> };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body = Buffer.concat(chunks);
      const op = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? '';
      const counted = READ_OPS.has(op) || WRITE_OPS.has(op);
      if (counted) {
        const json = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
        // INDEXES: the total plus the share of the table and of each index.
        json.ReturnConsumedCapacity ??= 'INDEXES';
        body = Buffer.from(JSON.stringify(json));
        units.calls[op] = (units.calls[op] ?? 0) + 1;
      }
      const headers = { ...req.headers, 'content-length': String(body.length), host: upstream.host };
      const out = httpRequest({ hostname: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers }, (up) => {
        const answer: Buffer[] = [];
        up.on('data', (c: Buffer) => answer.push(c));
        up.on('end', () => {
          const text = Buffer.concat(answer);
          if (counted && (up.statusCode ?? 500) < 300) {
            const consumed = (JSON.parse(text.toString('utf8')) as { ConsumedCapacity?: unknown }).ConsumedCapacity;
            type Units = { CapacityUnits?: number };
            const list = (Array.isArray(consumed) ? consumed : consumed ? [consumed] : []) as Array<
              Units & { TableName?: string; Table?: Units; GlobalSecondaryIndexes?: Record<string, Units> }
            >;
            const n = list.reduce((s, c) => s + (c.CapacityUnits ?? 0), 0);
            const kind = WRITE_OPS.has(op) ? 'write' : 'read';
            units[kind] += n;
            const add = (target: string, u: number | undefined) => {
              if (u) units.byTarget[`${kind} ${target}`] = (units.byTarget[`${kind} ${target}`] ?? 0) + u;
            };
            for (const c of list) {
              // Table names carry the bench's prefix; the table's own name is what tells.
              const table = (c.TableName ?? '?').replace(/^bench-[a-z]+-/, '');
              add(table, c.Table?.CapacityUnits ?? (c.GlobalSecondaryIndexes ? undefined : c.CapacityUnits));
              for (const [index, u] of Object.entries(c.GlobalSecondaryIndexes ?? {})) add(`${table}/${index}`, u.CapacityUnits);
            }
          }
          res.writeHead(up.statusCode ?? 500, { ...up.headers, 'content-length': String(text.length) });
          res.end(text);
        });
      });
      out.on('error', (err) => {
        res.writeHead(502);
        res.end(String(err));
      });
      out.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    units,
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
}

export interface GroupCpu {
  name: string;
  request: string;
  requests: number;
  cpuMsPerRequest: number;
}

/** One phase of the cost measurement: how the requests were sent and what they cost. */
export interface CostPhase {
  requests: number;
  connections: number;
  providerLatencyMs: number;
  durationS: number;
  /** DynamoDB calls per request by operation (the bench's counter, not billing). */
  callsPerRequest: Record<string, number>;
  /** Request units per request by `write|read <table>[/<index>]`: where the WRU go. */
  unitsPerRequestByTarget: Record<string, number>;
  /** Log bytes per request: JSON log lines, and EMF documents split into their values and the rest. */
  logBytes: { linesPerRequest: number; emfValuesPerRequest: number; emfRestPerRequest: number; emfDocumentsPerSecond: number };
}

/** What the cost phases measured on the gateway group. */
export interface CostMeasurement extends MeasuredInputs {
  /** The EMF metrics seen (namespace/name/dimension values), which the count above is. */
  metrics: string[];
  phases: { alone: CostPhase; busy: CostPhase };
  description: string;
}

interface PhaseCounts {
  phase: CostPhase;
  cpuMs: number;
  write: number;
  read: number;
  byTarget: Record<string, number>;
  logText: string;
}

/** Units, calls, CPU and log output of the requests `send` makes, once their after-response writes have landed. */
async function measurePhase(
  gw: ChildGateway,
  counter: CapacityCounter,
  shape: { connections: number; providerLatencyMs: number },
  send: () => Promise<{ requests: number; errors: number }>,
): Promise<PhaseCounts> {
  const logBefore = statSync(gw.logFile).size;
  const before = { ...counter.units, calls: { ...counter.units.calls }, byTarget: { ...counter.units.byTarget } };
  const cpuBefore = cpuMs(gw.pid);
  const started = performance.now();
  const r = await send();
  const durationS = (performance.now() - started) / 1000;
  // Held writes go out within a second, or when the process goes idle.
  await sleep(1500);
  const cpuUsed = cpuMs(gw.pid) - cpuBefore;
  const logAfter = statSync(gw.logFile).size;
  if (r.errors > 0) throw new Error(`cost phase: ${r.errors} errors in ${r.requests} requests`);
  const n = r.requests;
  const logText = readFileSync(gw.logFile).subarray(logBefore, logAfter).toString('utf8');
  const perRequest = (after: Record<string, number>, prior: Record<string, number>) =>
    Object.fromEntries(
      Object.entries(after)
        .map(([k, v]) => [k, round((v - (prior[k] ?? 0)) / n, 3)] as const)
        .filter(([, v]) => v > 0),
    );
  const bytes = { lines: 0, emfValues: 0, emfRest: 0, emfDocuments: 0 };
  for (const line of logText.split('\n')) {
    if (!line) continue;
    const size = Buffer.byteLength(line) + 1;
    const doc = emfDocument(line);
    if (!doc) {
      bytes.lines += size;
      continue;
    }
    // What grows with the requests in a shared document: each metric's values.
    const values = doc._aws.CloudWatchMetrics.flatMap((d) => d.Metrics).reduce((sum, m) => sum + JSON.stringify(doc[m.Name]).length, 0);
    bytes.emfValues += values;
    bytes.emfRest += size - values;
    bytes.emfDocuments++;
  }
  return {
    phase: {
      requests: n,
      connections: shape.connections,
      providerLatencyMs: shape.providerLatencyMs,
      durationS: round(durationS, 2),
      callsPerRequest: perRequest(counter.units.calls, before.calls),
      unitsPerRequestByTarget: perRequest(counter.units.byTarget, before.byTarget),
      logBytes: {
        linesPerRequest: Math.round(bytes.lines / n),
        emfValuesPerRequest: round(bytes.emfValues / n, 1),
        emfRestPerRequest: round(bytes.emfRest / n, 1),
        emfDocumentsPerSecond: round(bytes.emfDocuments / durationS, 2),
      },
    },
    cpuMs: cpuUsed,
    write: counter.units.write - before.write,
    read: counter.units.read - before.read,
    byTarget: Object.fromEntries(Object.entries(counter.units.byTarget).map(([k, v]) => [k, v - (before.byTarget[k] ?? 0)])),
    logText,
  };
}

type EmfDocument = { _aws: { CloudWatchMetrics: Array<{ Namespace: string; Dimensions: string[][]; Metrics: Array<{ Name: string }> }> } } & Record<
  string,
  unknown
>;

function emfDocument(line: string): EmfDocument | undefined {
  if (!line.includes('"CloudWatchMetrics"')) return undefined;
  try {
    return JSON.parse(line) as EmfDocument;
  } catch {
    return undefined;
  }
}

/**
 * The per-request inputs of the cost model, measured on a gateway process that runs the
 * production bundles (stdout to a file, as Lambda's goes to its log) against the capacity
 * counter: a chat completion through a saved config to a managed provider, with a key
 * under a rate-limit policy and the request log on. Two phases:
 * - alone: one request at a time, each finished (after-response writes included) before the
 *   next, as an on-demand Lambda environment serves them: nothing is held or shared;
 * - busy: `busy.connections` requests in flight to a provider answering after
 *   `busy.latencyMs`, as one managed-instances environment serves them: counters and EMF
 *   values are held and shared. Its rate is the process's; the model scales the shared part
 *   to other rates.
 */
export async function measureCostInputs(
  gw: ChildGateway,
  counter: CapacityCounter,
  upstreams: { alone: string; busy: string },
  opts: { alone: { requests: number; latencyMs: number }; busy: { durationS: number; connections: number; latencyMs: number } },
): Promise<CostMeasurement> {
  const admin = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => api<T>(gw.url, gw.adminKey, method, path, body);
  const body = JSON.stringify({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'Summarise the benefits of a gateway in front of model providers in one line' }],
  });
  const specFor = async (name: string, upstreamUrl: string) => {
    const key = await setUpLimitedChat(admin, name, upstreamUrl, PROVIDER_KEY);
    return {
      url: `${gw.url}/v1/chat/completions`,
      method: 'POST' as const,
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': key.secret, 'x-gateway-config': `${name}-config` },
      body,
    };
  };
  const aloneSpec = await specFor('cost', upstreams.alone);
  const busySpec = await specFor('cost-busy', upstreams.busy);
  const sendOne = async (spec: typeof aloneSpec) => {
    const res = await fetch(spec.url, { method: 'POST', headers: spec.headers, body });
    const bytes = (await res.arrayBuffer()).byteLength;
    if (res.status !== 200) throw new Error(`cost request answered ${res.status}`);
    return bytes;
  };
  // Warm: caches (key, config, provider, policy), JIT, connections.
  await runLoad(aloneSpec, { connections: 16, durationS: 2, record: false });
  const responseBytes = await sendOne(aloneSpec);
  await sleep(1500);

  const alone = await measurePhase(gw, counter, { connections: 1, providerLatencyMs: opts.alone.latencyMs }, async () => {
    for (let i = 0; i < opts.alone.requests; i++) {
      await sendOne(aloneSpec);
      // Its after-response writes finish before the next request arrives.
      await sleep(100);
    }
    return { requests: opts.alone.requests, errors: 0 };
  });
  await sendOne(busySpec);
  // Closed loop, every request counted: the requests still in flight when the time is up
  // are waited for (a load tool that drops them would leave their writes uncounted).
  const busy = await measurePhase(gw, counter, { connections: opts.busy.connections, providerLatencyMs: opts.busy.latencyMs }, async () => {
    const deadline = performance.now() + opts.busy.durationS * 1000;
    let requests = 0;
    await Promise.all(
      Array.from({ length: opts.busy.connections }, async () => {
        while (performance.now() < deadline) {
          await sendOne(busySpec);
          requests++;
        }
      }),
    );
    return { requests, errors: 0 };
  });

  const metrics = new Set<string>();
  for (const line of busy.logText.split('\n')) {
    const doc = emfDocument(line);
    for (const directive of doc?._aws.CloudWatchMetrics ?? []) {
      for (const dims of directive.Dimensions) {
        const dimValues = dims.map((d) => `${d}=${String(doc![d])}`).join(',');
        for (const m of directive.Metrics) metrics.add(`${directive.Namespace}/${m.Name}{${dimValues}}`);
      }
    }
  }
  const n = { alone: alone.phase.requests, busy: busy.phase.requests };
  const rate = n.busy / busy.phase.durationS;
  // Counters (rate limits, spend) are the usage table's: held and shared in a busy process.
  const heldUnits = Object.entries(busy.byTarget)
    .filter(([target]) => target.startsWith('write usage'))
    .reduce((sum, [, u]) => sum + u, 0);
  const b = busy.phase.logBytes;
  return {
    description: `POST /v1/chat/completions through a saved config to a managed OpenAI provider, key under a requests/min policy, request log on; alone: ${n.alone} requests one at a time; busy: ${opts.busy.connections} in flight, provider answering after ${opts.busy.latencyMs} ms (${round(rate, 1)} req/s in one process)`,
    cpuMsPerRequest: round(busy.cpuMs / n.busy, 3),
    alone: {
      writeUnitsPerRequest: round(alone.write / n.alone, 3),
      readUnitsPerRequest: round(alone.read / n.alone, 3),
      logBytesPerRequest: Math.round(Buffer.byteLength(alone.logText) / n.alone),
      heldWriteUnitsPerSecond: 0,
      heldLogBytesPerSecond: 0,
    },
    busy: {
      requestsPerSecond: round(rate, 2),
      writeUnitsPerRequest: round((busy.write - heldUnits) / n.busy, 3),
      readUnitsPerRequest: round(busy.read / n.busy, 3),
      logBytesPerRequest: Math.round(b.linesPerRequest + b.emfValuesPerRequest),
      heldWriteUnitsPerSecond: round(heldUnits / busy.phase.durationS, 3),
      heldLogBytesPerSecond: Math.round((b.emfRestPerRequest * n.busy) / busy.phase.durationS),
    },
    // What crosses the NAT: the upstream request (the same JSON plus headers, about 300 B)
    // and the provider's answer (what the gateway relays, measured on one response).
    providerBytesPerRequest: Buffer.byteLength(body) + 300 + responseBytes + 300,
    customMetrics: metrics.size,
    metrics: [...metrics].sort(),
    phases: { alone: alone.phase, busy: busy.phase },
  };
}

/** CPU per request of each endpoint group, sequential requests on a warm process. */
export async function measureGroupCpu(
  gw: ChildGateway,
  requests: Array<{ name: string; method: string; path: string; headers?: Record<string, string>; body?: string }>,
  count: number,
): Promise<GroupCpu[]> {
  const out: GroupCpu[] = [];
  for (const r of requests) {
    const send = async () => {
      const res = await fetch(gw.url + r.path, { method: r.method, headers: { 'x-gateway-api-key': gw.adminKey, ...r.headers }, body: r.body });
      await res.arrayBuffer();
      if (res.status >= 400) throw new Error(`${r.method} ${r.path} -> ${res.status}`);
    };
    for (let i = 0; i < 30; i++) await send();
    await sleep(300);
    const before = cpuMs(gw.pid);
    for (let i = 0; i < count; i++) await send();
    const used = cpuMs(gw.pid) - before;
    out.push({ name: r.name, request: `${r.method} ${r.path}`, requests: count, cpuMsPerRequest: round(used / count, 3) });
  }
  return out;
}

export const COST_LATENCIES_S = [0.5, 2, 10] as const;
export const COST_RATES = [10, 100, 1000] as const;

export interface CostRow {
  providerLatencyS: number;
  requestsPerSecond: number;
  onDemand: OnDemandCost;
  managedInstances: ManagedInstancesCost;
}

export interface CostResults {
  pricesAsOf: string;
  region: string;
  measured: CostMeasurement;
  onDemand: OnDemandSettings;
  managedInstances: ManagedInstancesSettings;
  rows: CostRow[];
  breakEven: Array<{ providerLatencyS: number; requestsPerSecond: number | null }>;
  /** Non-streamed assistant runs: workflow, queue and worker costs per million runs. */
  assistantRuns: { shape: RunShape; path: string[]; rows: Array<{ providerLatencyS: number; cost: ModeCost }> };
  /** Managed instances at 2 s and 100 req/s with one setting or input changed: what moves the total. */
  variants: Array<{ change: string; usdPerMillion: number }>;
  /** Front doors, what grows, the scale table and a batch line (bench/lib/cost-growth.ts). */
  growth: GrowthResults;
  assumptions: string[];
}

export function costTables(m: CostMeasurement, onDemand: OnDemandSettings, managed: ManagedInstancesSettings): CostResults {
  const rows: CostRow[] = [];
  for (const providerLatencyS of COST_LATENCIES_S) {
    for (const requestsPerSecond of COST_RATES) {
      const t = { providerLatencyS, requestsPerSecond };
      rows.push({ providerLatencyS, requestsPerSecond, onDemand: onDemandCost(m, t, onDemand), managedInstances: managedInstancesCost(m, t, managed) });
    }
  }
  return {
    pricesAsOf: PRICES_AS_OF,
    region: REGION,
    measured: m,
    onDemand,
    managedInstances: managed,
    rows,
    variants: variantsAt(m, managed, { providerLatencyS: 2, requestsPerSecond: 100 }),
    growth: growthTables(m, onDemand, managed),
    assistantRuns: runCosts(),
    breakEven: COST_LATENCIES_S.map((providerLatencyS) => ({
      providerLatencyS,
      requestsPerSecond: breakEvenRps(m, providerLatencyS, onDemand, managed) ?? null,
    })),
    assumptions: [
      `CPU ms per request measured here (${m.cpuMsPerRequest} ms, this machine's x86 core) is taken as the time on one Graviton vCPU; on demand it scales with 1,769 MB / memory below 1,769 MB (${round(processingMs(m.cpuMsPerRequest, onDemand.memoryMb), 3)} ms at ${onDemand.memoryMb} MB).`,
      'Billed on-demand duration = provider latency + that processing time; DynamoDB round trips and the after-response request-log write add a few ms not counted here.',
      `Lambda adds ${onDemand.platformLogBytesPerInvoke} B of platform log records (start, report) per on-demand invocation (an estimate, not measured here).`,
      `Managed instances: environments = max(minimum, requests in flight / ${managed.perExecutionEnvironmentMaxConcurrency}, CPU / ${managed.cpuTargetUtilization * 100} % of a vCPU); each instance keeps 1 vCPU and 1 GiB; at least 3 instances; the cheapest allowed type wins. Steady traffic: no headroom for surges is priced in.`,
      'NAT data: the provider request and response plus the log bytes pass through NAT (DynamoDB does not: gateway endpoint). An existing VPC may pay for egress differently.',
      `On demand an environment serves one request at a time: every write is the request's own (the alone phase). On managed instances what an environment holds and writes per second (counters, EMF document overhead: ${m.busy.heldWriteUnitsPerSecond} WRU and ${m.busy.heldLogBytesPerSecond} B per second, measured at ${m.busy.requestsPerSecond} req/s in one process) is shared by the requests of that environment (rate / environments), never costing more per request than the same writes unshared.`,
      'No free tier, no Savings Plans (they apply to the EC2 part of managed instances only). Data transfer out to callers, storage, PITR, KMS, X-Ray and the other items that grow with a real workload are in the "what grows" table, not in these totals.',
    ],
  };
}

/**
 * A run that answers in one model step, as the runs workflow (infra/workflows/runs.ts)
 * executes it; the path is checked against the definition, so a changed workflow shows
 * here instead of a stale count.
 */
function runCosts(): CostResults['assistantRuns'] {
  const states = runsDefinition().States as Record<string, { Type: string }>;
  const path = ['MarkInProgress', 'AfterStart', 'ModelStep', 'AfterModelStep', 'Done'];
  for (const name of path) if (!states[name]) throw new Error(`The runs workflow has no state '${name}': update the run path in bench/lib/cost.ts.`);
  const tasks = path.filter((name) => states[name]!.Type === 'Task').length;
  // The FIFO queue: SendMessage, the consumer's ReceiveMessage, DeleteMessage; the consumer
  // that starts the execution is one more worker invocation. Workers stay on demand (1,024 MB).
  const shape: RunShape = { stateTransitions: path.length, sqsRequests: 3, lambdaInvocations: 1 + tasks, workerMemoryMb: 1024 };
  return { shape, path, rows: COST_LATENCIES_S.map((providerLatencyS) => ({ providerLatencyS, cost: assistantRunsCost(shape, providerLatencyS) })) };
}

function variantsAt(m: CostMeasurement, managed: ManagedInstancesSettings, t: { providerLatencyS: number; requestsPerSecond: number }) {
  const at = (mm: MeasuredInputs, s: ManagedInstancesSettings) => round(managedInstancesCost(mm, t, s).usdPerMillion, 3);
  // Records under a caller's trace id also write the trace index: one more unit per record
  // (the request-log record is within 1 KB: its own write is 1 WRU).
  const indexWru = m.phases.busy.unitsPerRequestByTarget['write logs'] ?? 1;
  const traced = { ...m, busy: { ...m.busy, writeUnitsPerRequest: m.busy.writeUnitsPerRequest + indexWru } };
  const existingVpc = { ...managed, natGateways: 0 };
  return [
    { change: 'as configured', usdPerMillion: at(m, managed) },
    {
      change: 'perExecutionEnvironmentMaxConcurrency 256 (CPU and memory per request allow it; AWS gives 64 per vCPU as the Node.js default)',
      usdPerMillion: at(m, { ...managed, perExecutionEnvironmentMaxConcurrency: 256 }),
    },
    { change: 'an existing VPC whose egress is already paid (no NAT lines)', usdPerMillion: at(m, existingVpc) },
    {
      change: `every request under a caller's trace id (its record also in the trace index: ${round(indexWru, 3)} WRU more)`,
      usdPerMillion: at(traced, managed),
    },
  ];
}

const usd = (v: number) => `$${v < 1 ? v.toFixed(3) : v.toFixed(2)}`;

export function renderCost(c: CostResults): string {
  const m = c.measured;
  const a = m.phases.alone;
  const b = m.phases.busy;
  const targets = (p: CostPhase) =>
    Object.entries(p.unitsPerRequestByTarget)
      .map(([t, v]) => `${t} ${v}`)
      .join(', ');
  const calls = (p: CostPhase) =>
    Object.entries(p.callsPerRequest)
      .map(([op, v]) => `${op} ${v}`)
      .join(', ');
  const head = (cols: string[]) => `| ${cols.join(' | ')} |\n|${cols.map(() => '---').join('|')}|`;
  const lines: string[] = [];
  lines.push(
    `Prices: ${c.region}, list prices of ${c.pricesAsOf} (infra/cost/prices.ts). Measured inputs (${m.description}):`,
    '',
    head(['input', 'alone (on demand)', 'busy (managed instances)']),
    `| requests measured | ${a.requests} | ${b.requests} in ${b.durationS} s (${m.busy.requestsPerSecond} req/s) |`,
    `| gateway CPU per request | | ${m.cpuMsPerRequest} ms |`,
    `| DynamoDB write units per request | ${m.alone.writeUnitsPerRequest} | ${m.busy.writeUnitsPerRequest} + ${m.busy.heldWriteUnitsPerSecond} per second shared (counters) |`,
    `| DynamoDB read units per request | ${m.alone.readUnitsPerRequest} | ${m.busy.readUnitsPerRequest} |`,
    `| DynamoDB units by table / index, per request | ${targets(a)} | ${targets(b)} |`,
    `| DynamoDB calls per request | ${calls(a)} | ${calls(b)} |`,
    `| log bytes per request | ${m.alone.logBytesPerRequest} B | ${m.busy.logBytesPerRequest} B + ${m.busy.heldLogBytesPerSecond} B per second shared (EMF documents) |`,
    `| EMF documents per second | | ${b.logBytes.emfDocumentsPerSecond} |`,
    `| provider bytes (request + response) | ${m.providerBytesPerRequest} B | ${m.providerBytesPerRequest} B |`,
    `| custom metrics (EMF, distinct) | ${m.customMetrics} | ${m.customMetrics} |`,
    '',
    `On demand: ${c.onDemand.memoryMb} MB arm64. Managed instances: ${c.managedInstances.instanceTypes.join(' or ')}, ${c.managedInstances.memoryMb} MB environments (${c.managedInstances.memoryMb / 1024 / c.managedInstances.memoryGiBPerVCpu} vCPU), ${c.managedInstances.perExecutionEnvironmentMaxConcurrency} concurrent requests each, at least ${c.managedInstances.minExecutionEnvironments} environments, ${c.managedInstances.natGateways} NAT gateway.`,
    '',
    head(['provider latency', 'req/s', 'on demand $/M', 'managed instances $/M', 'fleet']),
  );
  for (const r of c.rows) {
    const mi = r.managedInstances;
    lines.push(
      `| ${r.providerLatencyS} s | ${r.requestsPerSecond} | ${usd(r.onDemand.usdPerMillion)} | ${usd(mi.usdPerMillion)} | ${mi.instances} × ${mi.instanceType}, ${mi.executionEnvironments} env. (${mi.boundBy}) |`,
    );
  }
  lines.push(
    '',
    `Break-even (managed instances no dearer than on demand from this steady rate on): ${c.breakEven
      .map((b) => `${b.providerLatencyS} s: ${b.requestsPerSecond === null ? 'never' : `${b.requestsPerSecond} req/s`}`)
      .join('; ')}.`,
  );
  const headline = c.rows.find((r) => r.providerLatencyS === 2 && r.requestsPerSecond === 100);
  if (headline) {
    lines.push('', 'One million 2-second requests at a steady 100 req/s, itemised:', '', head(['item', 'on demand', 'managed instances', 'how']));
    const names = [...new Set([...headline.onDemand.items, ...headline.managedInstances.items].map((i) => i.name))];
    for (const name of names) {
      const od = headline.onDemand.items.find((i) => i.name === name);
      const mi = headline.managedInstances.items.find((i) => i.name === name);
      lines.push(`| ${name} | ${od ? usd(od.usdPerMillion) : '—'} | ${mi ? usd(mi.usdPerMillion) : '—'} | ${(mi ?? od)!.detail} |`);
    }
    lines.push(`| **total** | **${usd(headline.onDemand.usdPerMillion)}** | **${usd(headline.managedInstances.usdPerMillion)}** | |`);
  }
  lines.push(
    '',
    'Managed instances at 2 s and 100 req/s with one thing changed:',
    '',
    head(['change', '$ per million']),
    ...c.variants.map((v) => `| ${v.change} | ${usd(v.usdPerMillion)} |`),
  );
  const runs = c.assistantRuns;
  lines.push(
    '',
    `Non-streamed assistant runs (one model step: ${runs.path.join(' → ')}), per million runs, on top of their API requests (DynamoDB writes of runs, steps and messages not counted):`,
    '',
    head(['model step', ...runs.rows[0]!.cost.items.map((i) => i.name), 'total']),
    ...runs.rows.map((r) => `| ${r.providerLatencyS} s | ${r.cost.items.map((i) => usd(i.usdPerMillion)).join(' | ')} | ${usd(r.cost.usdPerMillion)} |`),
  );
  if (c.growth) lines.push('', renderGrowth(c.growth));
  lines.push('', 'Assumptions:', '', ...c.assumptions.map((a) => `- ${a}`));
  return lines.join('\n');
}

export interface RightSizingRow {
  name: string;
  cpuMsPerRequest: number;
  request: string;
  /** Cold start on this machine: process ready (runtime start + handler import) + first invocation, ms. */
  coldStartMs: number;
  coldStartFrom: string;
  byLatencyMb: number;
  byColdStartMb: number;
  recommendedMb: number | null;
  configuredMb: number;
  /** At the configured memory: added latency and cold start, scaled by 1,769 / memory. */
  addedMsAtConfigured: number;
  coldStartMsAtConfigured: number;
}

export const RIGHT_SIZING = { maxAddedMs: 5, maxColdStartMs: 500, stepMb: 64 } as const;

export function rightSizingRows(
  cpu: GroupCpu[],
  cold: Array<{ name: string; initMs: number; firstInvocationMs: number }>,
  coldStartFrom: string,
  configuredMb: (group: string) => number,
): RightSizingRow[] {
  return cpu.map((g) => {
    const c = cold.find((x) => x.name === g.name);
    const coldStartMs = c ? round(c.initMs + (Number.isFinite(c.firstInvocationMs) ? c.firstInvocationMs : 0), 1) : NaN;
    const r = rightSizeMemory(g.cpuMsPerRequest, coldStartMs, RIGHT_SIZING);
    const mb = configuredMb(g.name);
    return {
      name: g.name,
      request: g.request,
      cpuMsPerRequest: g.cpuMsPerRequest,
      coldStartMs,
      coldStartFrom,
      byLatencyMb: r.byLatencyMb,
      byColdStartMb: r.byColdStartMb,
      recommendedMb: r.memoryMb ?? null,
      configuredMb: mb,
      addedMsAtConfigured: round(processingMs(g.cpuMsPerRequest, mb), 2),
      coldStartMsAtConfigured: round(processingMs(coldStartMs, mb), 0),
    };
  });
}

export function renderRightSizing(rows: RightSizingRow[]): string {
  const head = [
    'group',
    'request',
    'CPU ms/req',
    'cold start ms',
    'MB for < 5 ms',
    'MB for < 500 ms cold',
    'smallest size',
    'configured',
    'added ms / cold ms at configured',
  ];
  return [
    `| ${head.join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
    ...rows.map(
      (r) =>
        `| ${r.name} | ${r.request} | ${r.cpuMsPerRequest} | ${r.coldStartMs} | ${r.byLatencyMb} | ${r.byColdStartMb} | ${r.recommendedMb ?? 'none ≤ 1769'} | ${r.configuredMb} | ${r.addedMsAtConfigured} / ${r.coldStartMsAtConfigured} |`,
    ),
    '',
    `Cold start: ${rows[0]?.coldStartFrom ?? ''}. Both figures are measured on one core of this machine and stretched by 1,769 MB / memory (Lambda's CPU share below one vCPU; assumed linear). The smallest size is the larger bound rounded up to 64 MB.`,
  ].join('\n');
}
