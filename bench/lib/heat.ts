/**
 * Issue 37 item 5: the hottest DynamoDB partitions of one busy workspace. The gateway under
 * test writes through the recording proxy (heat-recorder.ts) while it serves chat with
 * realistic metadata (the four well-known keys), a budget, a tokens and a requests policy;
 * every write's units are charged to its table's or index's partition key, and the busiest
 * keys are scaled to 10,000 req/s of that workspace.
 *
 * Two modes, because they write differently:
 * - on demand (Lambda, one request per container): requests one at a time, with the rate
 *   limiter's reservations ahead of demand off (RATE_LIMIT_RESERVE_AHEAD_MS=0), so every
 *   request makes its own counter, budget and log writes, as a container serving one
 *   request at a time does;
 * - multi-concurrency (Managed Instances, the local runtime as is): many requests at once in
 *   one process, so counters reserved in blocks, held increments and grouped log writes are
 *   shared. Scaling its writes per request linearly to 10,000 req/s is an upper bound: more
 *   requests per process share more.
 */
import { api, setUpFullChat } from './admin';
import { startHeatRecorder, type WriteRecord } from './heat-recorder';
import { writeUnits } from './dynamo-size';
import { drive, round, type RequestSpec } from './load';

/** Half of DynamoDB's 1,000 write units per second per partition. */
export const PARTITION_WCU_GOAL = 500;
export const TARGET_RPS = 10_000;
/** Issue 37 sizes the request log for 2 KB records: the table they go to, and that size. */
export const RECORD_TABLE = 'logs';
export const RECORD_BYTES = 2048;

export interface HeatRow {
  /** Table, or `table/index`. */
  target: string;
  /** The partition key; for a sharded key, its family with `{shard}` in place of the shard number. */
  partition: string;
  /** A sharded key: how many of its shards the run wrote (the figures model the busiest). */
  shards?: number;
  /** A sharded key: its busiest shard's own figure scaled linearly, the sampling noise of a short run included. */
  busiestShardLinear?: number;
  writes: number;
  units: number;
  wcuPer1000Rps: number;
  wcuAtTarget: number;
  /** The same with every request-log record (and its index copies) at least `RECORD_BYTES` (the issue's sizing). */
  wcuAtTargetWithRecordBytes: number;
  /** Both figures within the goal. */
  withinGoal: boolean;
}

export interface HeatTargetTotals {
  writesPerRequest: number;
  unitsPerRequest: number;
  partitions: number;
  avgItemBytes: number;
  maxItemBytes: number;
}

export interface HeatMode {
  mode: 'on-demand' | 'multi-concurrency';
  how: string;
  requests: number;
  connections: number;
  seconds: number;
  statuses: Record<string, number>;
  writeCalls: Record<string, number>;
  writesPerRequest: number;
  unitsPerRequest: number;
  byTarget: Record<string, HeatTargetTotals>;
  /** The busiest partition keys, hottest first. */
  top: HeatRow[];
  hottest?: HeatRow;
}

export interface HeatResults {
  targetRps: number;
  goalWcuPerPartition: number;
  metadata: string;
  policies: string;
  modes: HeatMode[];
  /** Did the hottest partition of every mode stay within the goal at the target rate? */
  met: boolean;
}

/**
 * The family of a sharded partition key with `{shard}` in place of its shard number, and the
 * number; undefined for a key that is not sharded. The gateway's shard layouts: a request-log
 * partition (every table/index of `logs`) ends in `#<shard>` (functions/shared/db/log-keys.ts);
 * a spend counter has `#SPEND#<shard>#` (shard 0: `#SPEND#`, functions/spend/dimensions.ts);
 * any other counter ends in `#s<shard>` (shard 0: no suffix, functions/policies/shards.ts).
 */
export function shardFamily(target: string, partition: string): ShardFamily | undefined {
  if (target === RECORD_TABLE || target.startsWith(`${RECORD_TABLE}/`)) {
    const m = /^(.*)#(\d+)$/.exec(partition);
    return m ? { family: `${m[1]}#{shard}`, shard: Number(m[2]), picked: 'per-write' } : undefined;
  }
  const spend = /^(.*)#SPEND#(?:(\d+)#)?(.*)$/.exec(partition);
  if (spend) return { family: `${spend[1]}#SPEND#{shard}#${spend[3]}`, shard: Number(spend[2] ?? 0), picked: 'per-write' };
  const counter = /^(.*?)(?:#s(\d+))?$/.exec(partition)!;
  return { family: `${counter[1]}#s{shard}`, shard: Number(counter[2] ?? 0), picked: 'per-process' };
}

export interface ShardFamily {
  family: string;
  shard: number;
  /**
   * How a write's shard is chosen: `per-write` at random or by a hash (request logs, spend
   * counters); `per-process` by the request's starting shard (limits and budgets), which is
   * random per request on demand and the process's own shard in a busy process.
   */
  picked: 'per-write' | 'per-process';
}

/**
 * A container writes a limit's or budget's counters on its own shard (a busy process on its
 * home shard; one serving a request at a time on the shard whose budget spend or rate-limit
 * unit it holds), so at the target rate a shard takes the writes of the containers whose
 * shard it is: the run's process stands for `targetRps / requestsPerSecond` containers like
 * it, each on a random one of the counter's shards (`shardsOf`, 1 when unknown).
 */
export interface PerProcessModel {
  requestsPerSecond: number;
  shardsOf: (family: string) => number | undefined;
}

/**
 * The busiest of `shards` shards in a second, when `perSecond` writes a second fall on them
 * uniformly at random (each write's shard drawn independently, as a record id's hash or a
 * counter's random shard is): the mean plus sqrt(2 ln k) standard deviations, the expected
 * maximum of k near-normal counts. Scaling one short run's busiest shard linearly instead
 * multiplies its sampling noise by the scale factor (a 1,000-request run over 64 shards
 * reads ~16 writes a shard, give or take 4).
 */
export function busiestShardWrites(perSecond: number, shards: number): number {
  const mean = perSecond / shards;
  return shards <= 1 ? mean : mean + Math.sqrt(2 * Math.log(shards)) * Math.sqrt(mean);
}

/**
 * Units per partition key, scaled to the target rate: per 1,000 req/s = units / requests x
 * 1,000. A sharded key's shards that the run wrote are one row: its busiest shard at the
 * target rate modelled from the family's total (`busiestShardWrites`), with its own busiest
 * shard scaled linearly beside it. A family whose requests all went to one shard (a busy
 * process's home shard) is one shard: it is scaled as it is.
 */
export function summariseHeat(
  writes: readonly WriteRecord[],
  requests: number,
  top = 10,
  targetRps = TARGET_RPS,
  goal = PARTITION_WCU_GOAL,
  perProcess?: PerProcessModel,
) {
  const byKey = new Map<string, HeatRow & { unitsWithRecordBytes: number }>();
  const recordFloor = writeUnits(RECORD_BYTES);
  const isRecord = (target: string) => target === RECORD_TABLE || target.startsWith(`${RECORD_TABLE}/`);
  const byTarget = new Map<string, { writes: number; units: number; bytes: number; maxBytes: number; partitions: Set<string> }>();
  for (const w of writes) {
    const id = `${w.target}\u0000${w.partition}`;
    const row = byKey.get(id) ?? {
      target: w.target,
      partition: w.partition,
      writes: 0,
      units: 0,
      unitsWithRecordBytes: 0,
      wcuPer1000Rps: 0,
      wcuAtTarget: 0,
      wcuAtTargetWithRecordBytes: 0,
      withinGoal: true,
    };
    row.writes++;
    row.units += w.units;
    row.unitsWithRecordBytes += isRecord(w.target) ? Math.max(w.units, recordFloor) : w.units;
    byKey.set(id, row);
    const t = byTarget.get(w.target) ?? { writes: 0, units: 0, bytes: 0, maxBytes: 0, partitions: new Set<string>() };
    t.writes++;
    t.units += w.units;
    t.bytes += w.bytes;
    t.maxBytes = Math.max(t.maxBytes, w.bytes);
    t.partitions.add(w.partition);
    byTarget.set(w.target, t);
  }
  const perRequest = (n: number) => n / Math.max(1, requests);
  type Raw = HeatRow & { unitsWithRecordBytes: number };
  const families = new Map<string, { family: ShardFamily; members: Raw[] }>();
  const single: Raw[] = [];
  for (const row of byKey.values()) {
    const f = shardFamily(row.target, row.partition);
    if (!f) single.push(row);
    else {
      const id = `${row.target}\u0000${f.family}`;
      const entry = families.get(id) ?? families.set(id, { family: f, members: [] }).get(id)!;
      entry.members.push(row);
    }
  }
  const scaleOne = ({ unitsWithRecordBytes, ...r }: Raw): HeatRow => {
    const wcuAtTarget = perRequest(r.units) * targetRps;
    const withRecordBytes = perRequest(unitsWithRecordBytes) * targetRps;
    return {
      ...r,
      wcuPer1000Rps: round(perRequest(r.units) * 1000, 1),
      wcuAtTarget: round(wcuAtTarget, 0),
      wcuAtTargetWithRecordBytes: round(withRecordBytes, 0),
      withinGoal: Math.max(wcuAtTarget, withRecordBytes) <= goal,
    };
  };
  const scaleFamily = (members: Raw[], busiestOf: (writesAtTarget: number) => number): HeatRow => {
    const sum = (pick: (r: Raw) => number) => members.reduce((n, r) => n + pick(r), 0);
    const writeCount = sum((r) => r.writes);
    const busiest = busiestOf(perRequest(writeCount) * targetRps);
    const unitsPerWrite = sum((r) => r.units) / writeCount;
    const wcuAtTarget = busiest * unitsPerWrite;
    const withRecordBytes = busiest * (sum((r) => r.unitsWithRecordBytes) / writeCount);
    const hottestMember = members.reduce((a, b) => (b.units > a.units ? b : a));
    return {
      target: members[0]!.target,
      partition: shardFamily(members[0]!.target, members[0]!.partition)!.family,
      shards: members.length,
      writes: writeCount,
      units: sum((r) => r.units),
      wcuPer1000Rps: round(wcuAtTarget / (targetRps / 1000), 1),
      wcuAtTarget: round(wcuAtTarget, 0),
      wcuAtTargetWithRecordBytes: round(withRecordBytes, 0),
      busiestShardLinear: round(perRequest(hottestMember.units) * targetRps, 0),
      withinGoal: Math.max(wcuAtTarget, withRecordBytes) <= goal,
    };
  };
  const scaleByProcesses = (family: ShardFamily, members: Raw[], model: PerProcessModel): HeatRow => {
    const processes = targetRps / model.requestsPerSecond;
    const shards = Math.max(1, model.shardsOf(family.family) ?? 1);
    // The family's writes at the target rate, shared by `processes` processes, each all on one shard.
    const row = scaleFamily(members, (writesAtTarget) => (busiestShardWrites(processes, shards) * writesAtTarget) / processes);
    return { ...row, shards };
  };
  const rows = [
    ...single.map(scaleOne),
    ...[...families.values()].map(({ family, members }) =>
      perProcess && family.picked === 'per-process'
        ? scaleByProcesses(family, members, perProcess)
        : members.length === 1
          ? { ...scaleOne(members[0]!), shards: 1 }
          : scaleFamily(members, (writesAtTarget) => busiestShardWrites(writesAtTarget, members.length)),
    ),
  ];
  // Hottest first by the larger figure: the goal holds for both.
  const heat = (r: HeatRow) => Math.max(r.wcuAtTarget, r.wcuAtTargetWithRecordBytes);
  rows.sort((a, b) => heat(b) - heat(a) || a.target.localeCompare(b.target) || a.partition.localeCompare(b.partition));
  const totalUnits = writes.reduce((n, w) => n + w.units, 0);
  return {
    writesPerRequest: round(perRequest(writes.length), 3),
    unitsPerRequest: round(perRequest(totalUnits), 3),
    byTarget: Object.fromEntries(
      [...byTarget.entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([target, t]) => [
          target,
          {
            writesPerRequest: round(perRequest(t.writes), 3),
            unitsPerRequest: round(perRequest(t.units), 3),
            partitions: t.partitions.size,
            avgItemBytes: Math.round(t.bytes / Math.max(1, t.writes)),
            maxItemBytes: t.maxBytes,
          },
        ]),
    ),
    top: rows.slice(0, top),
    hottest: rows[0],
  };
}

/** Ids in partition keys, named for the table (`<ws>`, `<key>`, ...): the shape is what matters. */
export function labelPartition(partition: string, names: Record<string, string>): string {
  let out = partition;
  for (const [id, name] of Object.entries(names)) if (id) out = out.split(id).join(name);
  return out.length > 90 ? `${out.slice(0, 87)}...` : out;
}

/** The four well-known metadata keys as a busy workspace sends them: many users, one environment. */
export function heatMetadata(i: number): string {
  return JSON.stringify({ _user: `user-${i % 1000}`, _environment: 'prod', _prompt: `prompt-${i % 5}`, _organisation: `org-${i % 3}` });
}
export const HEAT_METADATA_DESCRIPTION =
  'x-gateway-metadata on every request: _user (1,000 values, round robin), _environment: prod (one value), _prompt (5 values), _organisation (3 values)';

/**
 * One mode's run: `warmup` requests unrecorded, then `requests` recorded; the recorder stays
 * on until the after-response writes (and held increments, at most a second) have landed.
 */
export async function measureHeat(
  recorder: { recording: boolean; writes: WriteRecord[]; calls: Record<string, number> },
  spec: (i: number) => RequestSpec,
  opts: {
    mode: HeatMode['mode'];
    how: string;
    connections: number;
    requests: number;
    warmup: number;
    names: Record<string, string>;
    pauseMs?: number;
    /** Model limits' and budgets' counters per process (each process writes one shard of this many). */
    counterShards?: number;
  },
): Promise<HeatMode> {
  await drive(spec, { connections: opts.connections, requests: opts.warmup, pauseMs: opts.pauseMs });
  await new Promise((r) => setTimeout(r, 1500));
  recorder.writes.length = 0;
  for (const k of Object.keys(recorder.calls)) delete recorder.calls[k];
  recorder.recording = true;
  const run = await drive((i) => spec(i + opts.warmup), { connections: opts.connections, requests: opts.requests, pauseMs: opts.pauseMs });
  await new Promise((r) => setTimeout(r, 2000));
  recorder.recording = false;
  const { counterShards } = opts;
  const perProcess =
    counterShards === undefined
      ? undefined
      : {
          requestsPerSecond: run.requests / Math.max(0.001, run.seconds),
          shardsOf: () => counterShards,
        };
  const s = summariseHeat(recorder.writes, run.requests, 10, TARGET_RPS, PARTITION_WCU_GOAL, perProcess);
  const label = (r: HeatRow): HeatRow => ({ ...r, partition: labelPartition(r.partition, opts.names) });
  return {
    mode: opts.mode,
    how: opts.how,
    requests: run.requests,
    connections: opts.connections,
    seconds: round(run.seconds, 1),
    statuses: run.statuses,
    writeCalls: { ...recorder.calls },
    writesPerRequest: s.writesPerRequest,
    unitsPerRequest: s.unitsPerRequest,
    byTarget: s.byTarget,
    top: s.top.map(label),
    ...(s.hottest ? { hottest: label(s.hottest) } : {}),
  };
}

function table(head: string[], rows: Array<Array<string | number>>): string {
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

export function renderHeat(h: HeatResults): string {
  const parts: string[] = [
    `${h.metadata}; ${h.policies}. WCU = ceil(item KB) per write, x2 in a transaction, on the base table and on every index the item is in; per 1,000 req/s = units / requests x 1,000; the issue sizes the request log for 2 KB records, so a second figure counts every \`${RECORD_TABLE}\` write at ${RECORD_BYTES / 1024} KB at least (rows are ranked by the larger); goal: every partition key <= ${h.goalWcuPerPartition} WCU at ${h.targetRps.toLocaleString('en-US')} req/s of one workspace. A sharded key's shards are one row (\`{shard}\`): its busiest shard in a second at the target rate, modelled from the family's writes spread at random over the shards the run wrote (mean + sqrt(2 ln k) standard deviations); the last column scales the run's own busiest shard linearly, sampling noise and all.`,
  ];
  for (const m of h.modes) {
    parts.push(
      '',
      `**${m.mode}** (${m.how}; ${m.requests} requests, ${m.connections} at a time, ${m.seconds} s; statuses ${JSON.stringify(m.statuses)}): ${m.writesPerRequest} writes and ${m.unitsPerRequest} WCU per request; hottest ${m.hottest ? `${m.hottest.target} \`${m.hottest.partition}\` at ${m.hottest.wcuAtTarget} WCU` : 'n/a'}.`,
      '',
      table(
        [
          'table/index',
          'partition key',
          'writes',
          'WCU per 1,000 req/s',
          `WCU at ${h.targetRps.toLocaleString('en-US')} req/s`,
          `the same, records >= ${RECORD_BYTES / 1024} KB`,
          `<= ${h.goalWcuPerPartition}`,
          'shards',
          'busiest shard, linear',
        ],
        m.top.map((r) => [
          r.target,
          `\`${r.partition.replaceAll('|', '\\|')}\``,
          r.writes,
          r.wcuPer1000Rps,
          r.wcuAtTarget,
          r.wcuAtTargetWithRecordBytes,
          r.withinGoal ? 'pass' : '**fail**',
          r.shards ?? '',
          r.busiestShardLinear ?? '',
        ]),
      ),
      '',
      table(
        ['table/index', 'writes/req', 'WCU/req', 'partitions', 'avg item B', 'max item B'],
        Object.entries(m.byTarget).map(([t, v]) => [t, v.writesPerRequest, v.unitsPerRequest, v.partitions, v.avgItemBytes, v.maxItemBytes]),
      ),
    );
  }
  return parts.join('\n');
}

/** What the heat phase needs from the bench: the emulator, the fake, how to start a gateway. */
export interface HeatPhaseDeps {
  dynamoEndpoint: string;
  upstreamUrl: string;
  startGateway: (opts: {
    name: string;
    dynamodbEndpoint: string;
    env?: Record<string, string>;
  }) => Promise<{ url: string; adminKey: string; stop(): Promise<void> }>;
  requests: { onDemand: number; multi: number; warmup: number; connections: number };
  log: (msg: string) => void;
}

/** Ids to name in partition keys: the workspace, the key, the policies and budget. */
async function idNames(url: string, adminKey: string, keyId: string): Promise<Record<string, string>> {
  const list = async (path: string) => (await api<{ data?: Array<{ id: string; type?: string }> }>(url, adminKey, 'GET', path)).data ?? [];
  const names: Record<string, string> = { [keyId]: '<key>' };
  for (const w of await list('/v1/workspaces')) names[w.id] = '<ws>';
  for (const p of await list('/v1/policies/rate-limits')) names[p.id] = `<${p.type ?? 'rate-limit'} policy>`;
  for (const b of await list('/v1/policies/budgets')) names[b.id] = '<budget>';
  return names;
}

/** How long the on-demand mode waits after each answer: the process is idle again before the next request. */
const ON_DEMAND_PAUSE_MS = 50;
/**
 * Shards of each limit's and the budget's counters: every one of the scenario's (never
 * refusing) is large enough for the default `COUNTER_SHARDS`.
 */
const SCENARIO_COUNTER_SHARDS = 32;
/** How both modes scale a limit's or budget's counters (see `PerProcessModel`). */
const PER_CONTAINER = `a limit's or budget's counters are written on each container's own shard (a busy process's home shard; on demand, the shard whose budget spend or rate-limit unit the container holds, else one at random), so the busiest shard takes the writes of the containers that drew it: target / this run's req/s containers like this one over the counter's ${SCENARIO_COUNTER_SHARDS} shards, an upper bound where a request's shard is drawn at random`;

/** Both modes, each on its own gateway behind its own recorder. */
export async function runHeatPhase(d: HeatPhaseDeps): Promise<HeatResults> {
  const modes: HeatMode[] = [];
  // The AWS layout of the request log (the local runtime's default is 4 shards, for its tests' reads).
  const aws = { REQUEST_LOG_SHARDS: '64' };
  const plan: Array<{ mode: HeatMode['mode']; how: string; env: Record<string, string>; connections: number; requests: number; pauseMs?: number }> = [
    {
      mode: 'on-demand',
      how: `one request at a time, each alone in the process (${ON_DEMAND_PAUSE_MS} ms after each answer, so its after-response writes end first: shards are picked as a Lambda container serving one invocation picks them), reservations ahead of demand off (RATE_LIMIT_RESERVE_AHEAD_MS=0), request-log writes not grouped (REQUEST_LOG_BATCH_WAIT_MS=0), REQUEST_LOG_SHARDS=64 as on AWS: every request writes its own; ${PER_CONTAINER}`,
      env: { RATE_LIMIT_RESERVE_AHEAD_MS: '0', REQUEST_LOG_BATCH_WAIT_MS: '0', ...aws },
      connections: 1,
      requests: d.requests.onDemand,
      pauseMs: ON_DEMAND_PAUSE_MS,
    },
    {
      mode: 'multi-concurrency',
      how: `the local runtime (one process, ${d.requests.connections} requests at a time, REQUEST_LOG_SHARDS=64 as on AWS). Scaled to the target as processes like this one: writes whose shard is drawn per write (request logs, spend counters) scale linearly with requests, an upper bound (held writes coalesce more at higher rates); ${PER_CONTAINER}`,
      env: { ...aws },
      connections: d.requests.connections,
      requests: d.requests.multi,
    },
  ];
  for (const p of plan) {
    const name = p.mode === 'on-demand' ? 'heat-od' : 'heat-mc';
    const recorder = await startHeatRecorder(d.dynamoEndpoint, `bench-${name}-`);
    const gw = await d.startGateway({ name, dynamodbEndpoint: recorder.endpoint, env: p.env });
    try {
      const chat = await setUpFullChat(gw.url, gw.adminKey, 'heat', d.upstreamUrl, { tokens: true });
      const names = await idNames(gw.url, gw.adminKey, chat.keyId);
      const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Where do my writes land?' }] });
      const spec = (i: number): RequestSpec => ({
        url: `${gw.url}/v1/chat/completions`,
        method: 'POST',
        headers: { ...chat.headers, 'x-gateway-metadata': heatMetadata(i) },
        body,
      });
      const m = await measureHeat(recorder, spec, { ...p, warmup: d.requests.warmup, names, counterShards: SCENARIO_COUNTER_SHARDS });
      d.log(
        `heat ${m.mode}: ${m.requests} requests, ${m.writesPerRequest} writes / ${m.unitsPerRequest} WCU per request; hottest ${m.hottest?.target} ${m.hottest?.partition} ${m.hottest?.wcuAtTarget} WCU at ${TARGET_RPS} req/s (${m.hottest?.wcuAtTargetWithRecordBytes} with 2 KB records)`,
      );
      modes.push(m);
    } finally {
      await gw.stop();
      await recorder.stop();
    }
  }
  return {
    targetRps: TARGET_RPS,
    goalWcuPerPartition: PARTITION_WCU_GOAL,
    metadata: HEAT_METADATA_DESCRIPTION,
    policies:
      'chat with a saved config and a managed OpenAI provider (pricing, request log), the key under a requests/min and a tokens/min policy and a monthly budget, none refusing',
    modes,
    met: modes.every((m) => m.hottest?.withinGoal ?? true),
  };
}
