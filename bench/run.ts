/**
 * `npm run bench` (issue 12): throughput/latency, streaming, RSS under 1,000 streams,
 * storage calls per request and cold starts, all on loopback, in one process tree:
 *
 *   this process (autocannon + stream clients + an in-process gateway for the storage count)
 *   ├─ DynamoDB Local (Java; one for every gateway, each with its own table prefix)
 *   ├─ bench/upstream.ts      fake OpenAI / Anthropic / Cohere (test/fakes), 0, 50 and 2,000 ms latency
 *   ├─ bench/bare-proxy.ts    the floor: a bare node:http pass-through proxy
 *   ├─ infra/local/main.ts    the gateway under load (what `npm start` runs, with the endpoint
 *   │                         functions from their production bundles), in memory
 *   ├─ infra/local/main.ts    a fresh gateway for the RSS measurement (the same way)
 *   ├─ infra/local/main.ts    fresh gateways for heat (behind the recording proxy), batch and the open harness
 *   └─ node bench/.tmp/cold-child.mjs   one fresh process per cold-start sample
 *
 * Writes bench/results.json and the tables between the markers of bench/README.md.
 * Flags (any of them writes bench/.tmp/results.json instead and leaves bench/README.md alone):
 *   --quick                       short smoke run
 *   --skip=load,streams,rss,storage,cold,cost,heat,batch,open   leave phases out
 *   --only=heat,batch             run only these phases
 *   --heat-requests=N --batch-lines=N --batch-concurrency=N --soak-seconds=N   resize the new phases
 *   --scenarios=a,b  --latencies=0  --connections=1,16   a slice of the load matrix
 *   --update-cost                 only the cost phase (cost per million requests, right-sizing):
 *                                 merged into bench/results.json and its own block of bench/README.md
 */
import { cpus, totalmem, release } from 'node:os';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
// The local `awslambda` shim must be installed before anything loads the AWS SDK: the SDK's
// invoke store creates an empty `globalThis.awslambda`, and the shim only fills in a
// missing global (infra/local/awslambda-shim.ts), so a later import would leave the
// in-process gateway without `streamifyResponse`.
await import('../infra/local/awslambda-shim');

const { startDynamoDbLocal } = await import('../infra/local/dynamodb');
const { LOCAL_REQUEST_LOG_BATCH_WAIT_MS } = await import('../infra/local/server');
const { TABLE_SPECS } = await import('../infra/tables');
const { setUpGateway } = await import('./lib/admin');
const { bundleAll, buildProbe, measureColdStarts } = await import('./lib/cold-start');
const { median, runLoad, runPaced, round } = await import('./lib/load');
const { throughputBounds, withMachineCpu } = await import('./lib/machine-cpu');
const { loadAverage, REPO_ROOT, settle, spawnTsJson, startChildGateway, TMP_DIR, rssMb } = await import('./lib/procs');
const { renderTables } = await import('./lib/report');
const { measureRss } = await import('./lib/rss');
const { BASELINE, DESCRIPTION, requestFor, SCENARIOS, STREAM_ONLY_SCENARIOS } = await import('./lib/scenarios');
const { measureStorageCalls } = await import('./lib/storage');
const { measureStreamsInterleaved } = await import('./lib/streams');
const { runHeatPhase } = await import('./lib/heat');
const { runBatchPhase } = await import('./lib/batch');
const { runOpenHarnessPhase } = await import('./lib/open-phase');
const { costTables, measureCostInputs, measureGroupCpu, renderCost, renderRightSizing, rightSizingRows, startCapacityCounter } = await import('./lib/cost');
const { DEFAULT_MANAGED_INSTANCES, DEFAULT_OPTIONS } = await import('../infra/stacks/options');
type Results = import('./lib/report').Results;
type Upstreams = import('./lib/scenarios').Upstreams;
type Targets = import('./lib/scenarios').Targets;
type Latency = import('./lib/scenarios').Latency;

const args = process.argv.slice(2);
const QUICK = args.includes('--quick');
const UPDATE_COST = args.includes('--update-cost');
const listFlag = (name: string) =>
  args
    .find((a) => a.startsWith(`--${name}=`))
    ?.slice(name.length + 3)
    .split(',')
    .filter(Boolean);
const numberFlag = (name: string) => {
  const v = args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  return v === undefined ? undefined : Number(v);
};
const PHASES = ['load', 'streams', 'rss', 'storage', 'cold', 'cost', 'heat', 'batch', 'open'] as const;
const ONLY = listFlag('only');
const SKIP = new Set<string>(UPDATE_COST ? PHASES.filter((p) => p !== 'cost') : ONLY ? PHASES.filter((p) => !ONLY.includes(p)) : (listFlag('skip') ?? []));
const ONLY_SCENARIOS = listFlag('scenarios') as Array<import('./lib/scenarios').Scenario> | undefined;
const ONLY_LATENCIES = listFlag('latencies')?.map(Number) as Latency[] | undefined;
const ONLY_CONNECTIONS = listFlag('connections')?.map(Number);
const SIZED = ['heat-requests', 'batch-lines', 'batch-concurrency', 'soak-seconds'].some((name) => numberFlag(name) !== undefined);
const FULL = !QUICK && SKIP.size === 0 && !ONLY_SCENARIOS && !ONLY_LATENCIES && !ONLY_CONNECTIONS && !SIZED;

const M = {
  warmupS: QUICK ? 1 : 2,
  durationS: QUICK ? 2 : 5,
  connections: ONLY_CONNECTIONS ?? (QUICK ? [1, 16] : [1, 16, 64]),
  latencies: ONLY_LATENCIES ?? ([0, 50] as Latency[]),
  // The load matrix; the streams phase adds the stream-only scenarios (Responses, Messages).
  scenarios: ONLY_SCENARIOS?.filter((s) => !(STREAM_ONLY_SCENARIOS as readonly string[]).includes(s)) ?? [...SCENARIOS],
  streamScenarios: ONLY_SCENARIOS ?? [...SCENARIOS, ...STREAM_ONLY_SCENARIOS],
  streamWarmup: QUICK ? 5 : 30,
  streamSequential: QUICK ? 10 : 100,
  streamRounds: QUICK ? 2 : 5,
  streamConcurrency: 8,
  streamPerWorker: QUICK ? 2 : 10,
  rssStreams: QUICK ? 200 : 1000,
  slowChunkDelayMs: 400,
  coldRuns: QUICK ? 1 : 5,
  // Cost: requests one at a time (on demand), then one managed-instances environment at the
  // 100 req/s, 2 s headline: 200 in flight over 4 environments, 50 each, 25 req/s.
  costAloneRequests: QUICK ? 20 : 40,
  costBusyDurationS: QUICK ? 8 : 16,
  costBusyConnections: 50,
  groupCpuRequests: QUICK ? 50 : 300,
  storageRequests: QUICK ? 50 : 200,
  pairedRounds: QUICK ? 1 : 5,
  // Heat (issue 37): writes by partition key, one request at a time and many at once.
  heatOnDemandRequests: numberFlag('heat-requests') ?? (QUICK ? 100 : 400),
  heatMultiRequests: (numberFlag('heat-requests') ?? (QUICK ? 100 : 400)) * 5,
  heatConnections: 32,
  // Batch (issue 35): lines through the gateway's own engine, GATEWAY_BATCH_CONCURRENCY at a time.
  batchLines: numberFlag('batch-lines') ?? (QUICK ? 500 : 5000),
  batchConcurrency: numberFlag('batch-concurrency') ?? 8,
  // Open harness (issue 38 item 3).
  openSequential: QUICK ? 300 : 2000,
  openBoundDurationS: QUICK ? 1.5 : 3,
  openBoundMaxRate: QUICK ? 1600 : 6400,
  openStreams: QUICK ? 10 : 30,
  cadenceMs: 10,
  soakSeconds: numberFlag('soak-seconds') ?? (QUICK ? 60 : 600),
  soakRate: 100,
  soakSampleS: 10,
};

const started = Date.now();
const log = (msg: string) => process.stdout.write(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s | load ${loadAverage()}] ${msg}\n`);
mkdirSync(TMP_DIR, { recursive: true });

const machine = {
  nproc: cpus().length,
  cpu: cpus()[0]?.model ?? 'unknown',
  memoryGb: round(totalmem() / 1024 ** 3, 1),
  node: process.version,
  os: `${process.platform} ${release()}`,
  loadAvgAtStart: loadAverage(),
};
log(`machine: ${JSON.stringify(machine)}`);

const results: Results = {
  date: new Date().toISOString(),
  machine,
  method: {
    warmupS: M.warmupS,
    durationS: M.durationS,
    connections: M.connections.join(', '),
    repeats: `one run per (scenario, latency, concurrency); streams: ${M.streamWarmup} warm-up, ${M.streamSequential} sequential in ${M.streamRounds} interleaved rounds + ${M.streamConcurrency} x ${M.streamPerWorker} concurrent, medians; cold start: median of ${M.coldRuns} fresh processes per variant`,
    latency: 'per response, autocannon hrtime, percentiles computed from every 2xx sample',
    paired: `bare proxy and gateway-proxy-ratelimit alternated, ${M.pairedRounds} rounds of durationS each at the highest concurrency; the throughput target uses the median of the rounds' ratios`,
    halfSaturation: 'half of the best gateway-proxy-ratelimit req/s at 0 ms, evenly spaced requests for durationS',
    rss: `${M.rssStreams} concurrent streams, fake chunk delay ${M.slowChunkDelayMs} ms, RSS sampled every 100 ms`,
    storageRequests: M.storageRequests,
    loadGenerator: 'autocannon 8 (one thread, in the bench process)',
  },
  scenarios: DESCRIPTION,
  load: [],
  streams: [],
  storage: [],
  bundles: [],
  coldStart: [],
  targets: [],
  durationS: 0,
};

const dynamo = await startDynamoDbLocal(null);
/**
 * Run `load` while bench/record-writer.ts has DynamoDB Local write `rate` request-log records
 * a second (the gateway's own items, through its grouped writer): the storage work the
 * gateway's requests cause, beside a server that causes none.
 */
async function besideRecords<T>(rate: number, load: (writerPid: number) => Promise<T>): Promise<T> {
  const writer = await spawnTsJson('bench/record-writer.ts', {
    RECORDS_PER_S: String(rate),
    AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
    REQUEST_LOG_BATCH_WAIT_MS: String(LOCAL_REQUEST_LOG_BATCH_WAIT_MS),
  });
  return load(writer.pid).finally(() => writer.stop());
}

/** Start a phase once DynamoDB Local has worked off the previous phase's request-log writes. */
async function quietEmulator(): Promise<void> {
  const waitedMs = await settle(dynamo.pid);
  if (waitedMs > 1000) log(`waited ${waitedMs} ms for DynamoDB Local to finish the previous phase's writes`);
}
log(`DynamoDB Local at ${dynamo.endpoint}`);
const upstream = await spawnTsJson<Upstreams>('bench/upstream.ts', {
  BENCH_SLOW_CHUNK_DELAY_MS: String(M.slowChunkDelayMs),
  BENCH_CADENCE_MS: String(M.cadenceMs),
});
const up = upstream.info;
const bare = await spawnTsJson<{ ports: number[] }>('bench/bare-proxy.ts', {
  BARE_TARGETS: [up.openai0, up.openai50, up.openaiSlow, up.openaiCadence].join(','),
});
const bareUrl = (i: number) => `http://127.0.0.1:${bare.info.ports[i]}`;
log(`fake upstream (pid ${upstream.pid}) and bare proxy (pid ${bare.pid}) up`);

try {
  // ---- load: throughput and latency ------------------------------------------------------
  // The gateways under test run the production bundles, as deployed (also timed below).
  const functionBundles = resolve(TMP_DIR, 'bundles');
  if (!SKIP.has('load') || !SKIP.has('streams') || !SKIP.has('rss')) {
    results.bundles = await bundleAll();
    log(`bundles built in ${functionBundles}`);
  }
  if (!SKIP.has('load') || !SKIP.has('streams')) {
    const gw = await startChildGateway({ name: 'load', dynamodbEndpoint: dynamo.endpoint, functionBundles });
    const setup = await setUpGateway(gw.url, gw.adminKey, up);
    const targets: Targets = {
      upstreams: up,
      bare: { openai0: bareUrl(0), openai50: bareUrl(1) },
      gateway: gw.url,
      key: setup.key,
      limitedKey: setup.limitedKey,
      full: setup.full,
    };
    log(`gateway under test: pid ${gw.pid} at ${gw.url}, RSS ${rssMb(gw.pid)} MB`);

    if (!SKIP.has('load')) {
      for (const latency of M.latencies) {
        for (const scenario of M.scenarios) {
          const spec = requestFor(scenario, targets, latency);
          const serverPid = scenario.startsWith('direct') ? upstream.pid : scenario === 'bare-proxy' ? bare.pid : gw.pid;
          await quietEmulator();
          await runLoad(spec, { connections: 16, durationS: M.warmupS, record: false });
          for (const connections of M.connections) {
            const loadAvg = loadAverage();
            const r = await runLoad(spec, { connections, durationS: M.durationS, serverPid });
            results.load.push({ ...r, scenario, latencyMs: latency, baseline: BASELINE[scenario], addedP50: NaN, addedP99: NaN, loadAvg });
            log(
              `${scenario} @${latency} ms c=${connections}: ${r.rps} req/s, p50 ${r.p50} p99 ${r.p99} ms, server CPU ${r.serverCpuMsPerReq} ms/req, errors ${r.errors}`,
            );
          }
        }
      }
      for (const row of results.load) {
        const base = results.load.find((b) => b.scenario === row.baseline && b.latencyMs === row.latencyMs && b.connections === row.connections);
        row.addedP50 = base ? round(row.p50 - base.p50) : NaN;
        row.addedP99 = base ? round(row.p99 - base.p99) : NaN;
      }

      // The throughput ratio, from the bare proxy and the gateway loaded in turn: run one
      // after the other a minute apart, the two met different machines (the same code gave
      // 0.19 x and 0.34 x in two runs).
      if (M.scenarios.includes('bare-proxy') && M.scenarios.includes('gateway-proxy-ratelimit') && M.latencies.includes(0)) {
        const connections = Math.max(...M.connections);
        const run = async (scenario: 'bare-proxy' | 'gateway-proxy-ratelimit') => {
          await quietEmulator();
          const server = scenario === 'bare-proxy' ? bare.pid : gw.pid;
          const pids = { loadClient: process.pid, fake: upstream.pid, server, emulator: dynamo.pid };
          return withMachineCpu(
            pids,
            () => runLoad(requestFor(scenario, targets, 0), { connections, durationS: M.durationS, serverPid: server }),
            quietEmulator,
          );
        };
        const rounds: NonNullable<Results['paired']>['rounds'] = [];
        for (let i = 0; i < M.pairedRounds; i++) {
          // Alternate which goes first, so a drift in background load favours neither.
          const first = i % 2 === 0 ? await run('bare-proxy') : await run('gateway-proxy-ratelimit');
          const second = i % 2 === 0 ? await run('gateway-proxy-ratelimit') : await run('bare-proxy');
          const [bareRun, gatewayRun] = i % 2 === 0 ? [first, second] : [second, first];
          rounds.push({ bare: bareRun, gateway: gatewayRun, ratio: round(gatewayRun.rps / bareRun.rps) });
          log(`paired round ${i + 1}: bare proxy ${bareRun.rps} req/s, gateway ${gatewayRun.rps} req/s, ratio ${rounds.at(-1)!.ratio}`);
        }
        const medianCpu = (side: 'bare' | 'gateway') => {
          const of = (key: keyof (typeof rounds)[number]['bare']['machine']['perRequest']) =>
            round(median(rounds.map((x) => x[side].machine.perRequest[key])), 3);
          return { loadClient: of('loadClient'), fake: of('fake'), server: of('server'), emulator: of('emulator'), total: of('total') };
        };
        const machine = { bare: medianCpu('bare'), gateway: medianCpu('gateway') };
        results.paired = {
          connections,
          durationS: M.durationS,
          rounds,
          medianRatio: round(median(rounds.map((x) => x.ratio))),
          machine,
          ...throughputBounds(machine.bare, machine.gateway),
        };
        log(
          `machine CPU per request (median): bare proxy ${JSON.stringify(machine.bare)}, gateway ${JSON.stringify(machine.gateway)}; ceiling ${results.paired.ceilingRatio} x`,
        );
      }

      // p99 added latency at half of the gateway's saturation (rate-limited runs).
      if (M.scenarios.includes('gateway-proxy-ratelimit') && M.latencies.includes(0)) {
        const sat = Math.max(...results.load.filter((r) => r.scenario === 'gateway-proxy-ratelimit' && r.latencyMs === 0).map((r) => r.rps));
        const rate = Math.max(1, Math.floor(sat / 2));
        // Who had the two cores during each paced run: the p99 is mostly a matter of them.
        const watch = {
          gateway: { pid: gw.pid, mainThread: true },
          'bare proxy': { pid: bare.pid, mainThread: true },
          'fake provider': { pid: upstream.pid, mainThread: true },
          'DynamoDB Local': { pid: dynamo.pid, mainThread: false },
          'load client': { pid: process.pid, mainThread: true },
        };
        const half = { rate, durationS: M.durationS, warmupS: 2, watch };
        await quietEmulator();
        const direct = await runPaced(requestFor('direct-openai', targets, 0), { ...half, serverPid: upstream.pid });
        await quietEmulator();
        const gateway = await runPaced(requestFor('gateway-proxy-ratelimit', targets, 0), { ...half, serverPid: gw.pid });
        // The floor at the same rate, alone and beside the storage work the gateway causes:
        // how much of the p99 belongs to the machine rather than to the gateway.
        await quietEmulator();
        const bareAlone = await runPaced(requestFor('bare-proxy', targets, 0), { ...half, serverPid: bare.pid });
        const bareWithRecords = await besideRecords(rate, (writerPid) =>
          runPaced(requestFor('bare-proxy', targets, 0), {
            ...half,
            watch: { ...watch, 'record writer': { pid: writerPid, mainThread: true } },
            serverPid: bare.pid,
          }),
        );
        results.halfSaturation = {
          saturationRps: sat,
          rate,
          direct,
          gateway,
          addedP50: round(gateway.p50 - direct.p50),
          addedP99: round(gateway.p99 - direct.p99),
          floor: {
            bare: bareAlone,
            bareWithRecords,
            addedP99: round(bareAlone.p99 - direct.p99),
            addedP99WithRecords: round(bareWithRecords.p99 - direct.p99),
          },
        };
        log(
          `half saturation (${rate} req/s): p99 direct ${direct.p99} ms, gateway ${gateway.p99} ms, bare proxy ${bareAlone.p99} ms, bare proxy beside the records ${bareWithRecords.p99} ms`,
        );
      }

      // Issue 38 item 1: CPU per request with every hot-path feature on against the bare
      // proxy's, both at one rate (half of the gateway's saturation), in turn.
      if (M.scenarios.includes('bare-proxy') && M.scenarios.includes('gateway-chat-full') && M.latencies.includes(0)) {
        const sat = Math.max(...results.load.filter((r) => r.scenario === 'gateway-chat-full' && r.latencyMs === 0).map((r) => r.rps));
        const rate = Math.max(1, Math.floor(sat / 2));
        const paced = { rate, durationS: M.durationS, warmupS: 2 };
        const gatewayRound = async () => {
          await quietEmulator();
          return runPaced(requestFor('gateway-chat-full', targets, 0), { ...paced, serverPid: gw.pid });
        };
        const bareRound = async () => {
          await quietEmulator();
          return besideRecords(rate, () => runPaced(requestFor('bare-proxy', targets, 0), { ...paced, serverPid: bare.pid }));
        };
        const rounds: NonNullable<Results['cpuAtRate']>['rounds'] = [];
        const cpu = (r: { serverCpuMsPerReq?: number }) => r.serverCpuMsPerReq ?? Number.NaN;
        for (let i = 0; i < M.pairedRounds; i++) {
          // Alternate which goes first, so a drift in background load favours neither.
          const first = i % 2 === 0 ? await bareRound() : await gatewayRound();
          const second = i % 2 === 0 ? await gatewayRound() : await bareRound();
          const [bareRun, gatewayRun] = i % 2 === 0 ? [first, second] : [second, first];
          rounds.push({ bare: bareRun, gateway: gatewayRun, cpuRatio: round(cpu(gatewayRun) / cpu(bareRun)) });
          log(`CPU at ${rate} req/s, round ${i + 1}: bare proxy ${cpu(bareRun)} ms/req, gateway-chat-full ${cpu(gatewayRun)} ms/req`);
        }
        results.cpuAtRate = {
          scenario: 'gateway-chat-full',
          rate,
          durationS: M.durationS,
          rounds,
          medianCpuRatio: round(median(rounds.map((x) => x.cpuRatio))),
          medianCpu: {
            bare: round(median(rounds.map((x) => cpu(x.bare))), 3),
            gateway: round(median(rounds.map((x) => cpu(x.gateway))), 3),
          },
        };
      }
    }

    // ---- streams: TTFB and total time ----------------------------------------------------
    if (!SKIP.has('streams')) {
      const loadAvg = loadAverage();
      const measured = await measureStreamsInterleaved(
        M.streamScenarios.map((scenario) => ({ name: scenario, spec: requestFor(scenario, targets, 0, true) })),
        { warmup: M.streamWarmup, sequential: M.streamSequential, rounds: M.streamRounds, concurrency: M.streamConcurrency, perWorker: M.streamPerWorker },
        quietEmulator,
      );
      for (const [scenario, s] of measured) {
        results.streams.push({ ...s, scenario, baseline: BASELINE[scenario], ttfbAddedP50: NaN, totalAddedP50: NaN, loadAvg });
        log(`stream ${scenario}: TTFB p50 ${s.ttfbP50} ms (rounds ${s.roundTtfbP50.join(' ')}), total p50 ${s.totalP50} ms, errors ${s.errors}`);
      }
      for (const row of results.streams) {
        const base = results.streams.find((b) => b.scenario === row.baseline);
        row.ttfbAddedP50 = base ? round(row.ttfbP50 - base.ttfbP50) : NaN;
        row.totalAddedP50 = base ? round(row.totalP50 - base.totalP50) : NaN;
      }
    }
    log(`gateway under test RSS after load: ${rssMb(gw.pid)} MB`);
    await gw.stop();
  }

  // ---- RSS under 1,000 concurrent streams (a fresh gateway process) -----------------------
  if (!SKIP.has('rss')) {
    const gw = await startChildGateway({ name: 'rss', dynamodbEndpoint: dynamo.endpoint, functionBundles });
    const setup = await setUpGateway(gw.url, gw.adminKey, up);
    const targets: Targets = {
      upstreams: up,
      bare: { openai0: bareUrl(0), openai50: bareUrl(1) },
      gateway: gw.url,
      key: setup.key,
      limitedKey: setup.limitedKey,
      full: setup.full,
    };
    const warm = requestFor('gateway-chat-openai', targets, 0, true);
    const slow = requestFor('gateway-chat-openai', { ...targets, upstreams: { ...up, openai0: up.openaiSlow } }, 0, true);
    log(`RSS: ${M.rssStreams} streams through gateway pid ${gw.pid}`);
    const gatewayRss = await measureRss(gw.pid, slow, M.rssStreams, warm);
    log(`RSS gateway: before ${gatewayRss.beforeMb} MB, all open ${gatewayRss.allOpenMb} MB, peak ${gatewayRss.peakMb} MB, completed ${gatewayRss.completed}`);
    await gw.stop();
    const bareWarm = requestFor('bare-proxy', targets, 0, true);
    const bareSlow = { ...requestFor('bare-proxy', targets, 0, true), url: `${bareUrl(2)}/v1/chat/completions` };
    const bareRss = await measureRss(bare.pid, bareSlow, M.rssStreams, bareWarm);
    log(`RSS bare proxy: before ${bareRss.beforeMb} MB, all open ${bareRss.allOpenMb} MB, peak ${bareRss.peakMb} MB`);
    results.rss = { gateway: gatewayRss, bareProxy: bareRss, route: 'unified chat, OpenAI provider, stream: true', chunkDelayMs: M.slowChunkDelayMs };
  }

  // ---- storage calls (in-process gateway) and cold starts ---------------------------------
  if (!SKIP.has('storage') || !SKIP.has('cold')) {
    const { startLocalGateway } = await import('../infra/local/server');
    const gw = await startLocalGateway({
      port: 0,
      dataDir: 'memory',
      dynamodbEndpoint: dynamo.endpoint,
      tablePrefix: 'bench-inproc-',
      trustedHosts: ['127.0.0.1', 'localhost'],
      // Request log lines would interleave with the bench's output; storage calls are unaffected.
      env: { POWERTOOLS_LOG_LEVEL: 'ERROR' },
    });
    try {
      if (!SKIP.has('storage')) {
        results.storage = await measureStorageCalls(gw, up, M.storageRequests);
        for (const r of results.storage)
          log(`storage ${r.scenario}: ${r.readsPerRequest} reads, ${r.writesPerRequest} writes / request ${JSON.stringify(r.commands)}`);
      }
      if (!SKIP.has('cold')) {
        if (!results.bundles.length) results.bundles = await bundleAll();
        log(`bundles: ${results.bundles.map((b) => `${b.name} ${b.sizeKb} KB`).join(', ')}`);
        const probe = await buildProbe();
        const env: Record<string, string> = {
          AWS_REGION: 'us-east-1',
          AWS_ACCESS_KEY_ID: 'local',
          AWS_SECRET_ACCESS_KEY: 'local',
          AWS_ENDPOINT_URL_DYNAMODB: gw.dynamodbEndpoint,
          AWS_ENDPOINT_URL_KMS: gw.kmsEndpoint,
          GATEWAY_TRUSTED_HOSTS: '127.0.0.1,localhost',
          POWERTOOLS_METRICS_DISABLED: 'true',
          POWERTOOLS_SERVICE_NAME: 'ai-gateway',
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
          ...Object.fromEntries(TABLE_SPECS.map((t) => [t.envVar, process.env[t.envVar]!])),
        };
        const auth = { 'x-gateway-api-key': gw.adminKey };
        const events: Record<string, unknown> = {
          gateway: restEvent(
            'POST',
            '/v1/chat/completions',
            {
              ...auth,
              'content-type': 'application/json',
              'x-gateway-provider': 'openai',
              'x-gateway-custom-host': `${up.openai0}/v1`,
              authorization: 'Bearer sk-bench',
            },
            JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'cold start' }] }),
          ),
          admin: restEvent('GET', '/v1/api-keys', auth),
          prompts: restEvent('GET', '/v1/prompts', auth),
          assistants: restEvent('GET', '/v1/assistants', auth),
          'fine-tuning': restEvent('GET', '/v1/fine_tuning/jobs', auth),
          rerank: restEvent(
            'POST',
            '/v1/rerank',
            {
              ...auth,
              'content-type': 'application/json',
              'x-gateway-provider': 'cohere',
              'x-gateway-custom-host': up.cohere0,
              authorization: 'Bearer sk-bench',
            },
            JSON.stringify({ model: 'rerank-v3.5', query: 'cold start', documents: ['a gateway', 'cold start of a gateway'] }),
          ),
          guardrails: restEvent('GET', '/v1/guardrails', auth),
          policies: restEvent('GET', '/v1/policies/rate-limits', auth),
        };
        results.coldStart = await measureColdStarts(results.bundles, probe, env, events, M.coldRuns);
        for (const r of results.coldStart)
          log(`cold ${r.name}: ${r.sizeKb} KB, import ${r.importMs} ms, first response ${r.firstResponseMs} ms (status ${r.status})`);
      }
    } finally {
      await gw.stop();
    }
  }
  // ---- cost per million requests and right-sizing (a fresh gateway, production bundles) ----
  if (!SKIP.has('cost')) {
    if (!results.bundles.length) results.bundles = await bundleAll();
    await quietEmulator();
    const counter = await startCapacityCounter(dynamo.endpoint);
    const gw = await startChildGateway({
      name: 'cost',
      dynamodbEndpoint: counter.endpoint,
      functionBundles: resolve(TMP_DIR, 'bundles'),
      // As deployed (Powertools' default level), whatever an earlier phase left in this process's environment.
      env: { POWERTOOLS_LOG_LEVEL: 'INFO' },
    });
    try {
      const measured = await measureCostInputs(
        gw,
        counter,
        { alone: up.openai50, busy: up.openai2000 },
        {
          alone: { requests: M.costAloneRequests, latencyMs: 50 },
          busy: { durationS: M.costBusyDurationS, connections: M.costBusyConnections, latencyMs: 2000 },
        },
      );
      const { alone, busy } = measured;
      log(
        `cost inputs: ${measured.cpuMsPerRequest} ms CPU; alone ${alone.writeUnitsPerRequest} WRU, ${alone.logBytesPerRequest} log B; busy at ${busy.requestsPerSecond} req/s ${busy.writeUnitsPerRequest} WRU + ${busy.heldWriteUnitsPerSecond}/s, ${busy.logBytesPerRequest} log B + ${busy.heldLogBytesPerSecond} B/s; ${measured.customMetrics} metrics`,
      );
      results.cost = costTables(
        measured,
        { memoryMb: DEFAULT_OPTIONS.memorySize, platformLogBytesPerInvoke: 500 },
        {
          instanceTypes: DEFAULT_MANAGED_INSTANCES.instanceTypes,
          memoryMb: DEFAULT_MANAGED_INSTANCES.memorySize,
          memoryGiBPerVCpu: DEFAULT_MANAGED_INSTANCES.memoryGiBPerVCpu,
          perExecutionEnvironmentMaxConcurrency: DEFAULT_MANAGED_INSTANCES.perExecutionEnvironmentMaxConcurrency,
          minExecutionEnvironments: DEFAULT_MANAGED_INSTANCES.minExecutionEnvironments,
          natGateways: DEFAULT_MANAGED_INSTANCES.natGateways,
          cpuTargetUtilization: 0.5,
        },
      );
      const json = { 'content-type': 'application/json' };
      const groupCpu = await measureGroupCpu(
        gw,
        [
          {
            name: 'gateway',
            method: 'POST',
            path: '/v1/chat/completions',
            headers: { ...json, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${up.openai0}/v1`, authorization: 'Bearer sk-bench' },
            body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'right-size me' }] }),
          },
          { name: 'admin', method: 'GET', path: '/v1/api-keys' },
          { name: 'prompts', method: 'GET', path: '/v1/prompts' },
          { name: 'assistants', method: 'GET', path: '/v1/assistants' },
          { name: 'fine-tuning', method: 'GET', path: '/v1/fine_tuning/jobs' },
          {
            name: 'rerank',
            method: 'POST',
            path: '/v1/rerank',
            headers: { ...json, 'x-gateway-provider': 'cohere', 'x-gateway-custom-host': up.cohere0, authorization: 'Bearer sk-bench' },
            body: JSON.stringify({ model: 'rerank-v3.5', query: 'right size', documents: ['a gateway', 'memory of a function'] }),
          },
          { name: 'guardrails', method: 'GET', path: '/v1/guardrails' },
          { name: 'policies', method: 'GET', path: '/v1/policies/rate-limits' },
        ],
        M.groupCpuRequests,
      );
      // Cold starts of this run, or of the last full run when this one skipped them.
      const stored = existsSync(resolve(REPO_ROOT, 'bench/results.json'))
        ? (JSON.parse(readFileSync(resolve(REPO_ROOT, 'bench/results.json'), 'utf8')) as Results)
        : undefined;
      const cold = results.coldStart.length ? results.coldStart : (stored?.coldStart ?? []);
      const coldFrom = results.coldStart.length ? `this run (median of ${M.coldRuns})` : `the stored run of ${stored?.date ?? 'n/a'} (bench/results.json)`;
      results.rightSizing = rightSizingRows(groupCpu, cold, coldFrom, () => DEFAULT_OPTIONS.memorySize);
      for (const r of results.rightSizing) log(`right-size ${r.name}: ${r.cpuMsPerRequest} ms CPU, cold ${r.coldStartMs} ms -> ${r.recommendedMb} MB`);
    } finally {
      await gw.stop();
      await counter.stop();
    }
  }
  // ---- heat: DynamoDB writes by partition key, scaled to 10,000 req/s of one workspace ----
  if (!SKIP.has('heat')) {
    if (!results.bundles.length) results.bundles = await bundleAll();
    await quietEmulator();
    results.heat = await runHeatPhase({
      dynamoEndpoint: dynamo.endpoint,
      upstreamUrl: up.openai0,
      startGateway: (o) => startChildGateway({ ...o, functionBundles: resolve(TMP_DIR, 'bundles') }),
      requests: { onDemand: M.heatOnDemandRequests, multi: M.heatMultiRequests, warmup: 50, connections: M.heatConnections },
      log,
    });
  }
  // ---- batch: lines per second through the gateway's own batch engine ---------------------
  if (!SKIP.has('batch')) {
    if (!results.bundles.length) results.bundles = await bundleAll();
    await quietEmulator();
    results.batch = await runBatchPhase({
      dynamoEndpoint: dynamo.endpoint,
      upstreamUrl: up.openai0,
      startGateway: (o) => startChildGateway({ ...o, functionBundles: resolve(TMP_DIR, 'bundles') }),
      lines: M.batchLines,
      writesLines: 500,
      concurrency: M.batchConcurrency,
      timeoutMs: 15 * 60_000,
    });
    const b = results.batch;
    log(
      `batch: ${b.lines} lines in ${b.seconds} s = ${b.linesPerSecond} lines/s at concurrency ${b.concurrency} (${b.status}); ${b.writesPerLine} writes per line`,
    );
  }
  // ---- open harness: the open benchmarks' figures, each against the bare proxy ------------
  if (!SKIP.has('open')) {
    if (!results.bundles.length) results.bundles = await bundleAll();
    await quietEmulator();
    results.openHarness = await runOpenHarnessPhase({
      upstreams: up,
      bareUrl,
      barePid: bare.pid,
      startGateway: (name) => startChildGateway({ name, dynamodbEndpoint: dynamo.endpoint, functionBundles: resolve(TMP_DIR, 'bundles') }),
      quietEmulator,
      log,
      settings: {
        sequential: M.openSequential,
        boundDurationS: M.openBoundDurationS,
        boundMaxRate: M.openBoundMaxRate,
        streams: M.openStreams,
        cadenceMs: M.cadenceMs,
        soakSeconds: M.soakSeconds,
        soakRate: M.soakRate,
        soakSampleS: M.soakSampleS,
      },
    });
  }
} finally {
  await bare.stop();
  await upstream.stop();
  await dynamo.stop();
}

// ---- targets, files ----------------------------------------------------------------------
results.machine.loadAvgAtEnd = loadAverage();
results.targets = evaluateTargets(results);
results.durationS = Math.round((Date.now() - started) / 1000);
const tables = renderTables(results);
process.stdout.write(`\n${tables}`);

const jsonFile = FULL ? resolve(REPO_ROOT, 'bench/results.json') : resolve(TMP_DIR, 'results.json');
writeFileSync(jsonFile, `${JSON.stringify(results, null, 2)}\n`);
if (FULL) writeReadme(results, tables);
if ((FULL || UPDATE_COST) && results.cost && results.rightSizing) {
  if (UPDATE_COST) {
    // Only the cost fields change; every other measurement stays that of the last full run.
    const file = resolve(REPO_ROOT, 'bench/results.json');
    const stored = JSON.parse(readFileSync(file, 'utf8')) as Results;
    writeFileSync(
      file,
      `${JSON.stringify({ ...stored, cost: results.cost, rightSizing: results.rightSizing, costRun: { date: results.date, loadAvgAtStart: results.machine.loadAvgAtStart, loadAvgAtEnd: results.machine.loadAvgAtEnd } }, null, 2)}\n`,
    );
  }
  writeCostReadme(results);
}
log(`done in ${results.durationS} s; results in ${jsonFile}${FULL ? ' and bench/README.md' : ''}`);
process.exit(0);

// ---- helpers -------------------------------------------------------------------------------

/** An API Gateway REST (v1) proxy event, as infra/local/server.ts builds them. */
function restEvent(method: string, path: string, headers: Record<string, string>, body?: string) {
  return {
    resource: '/{proxy+}',
    path,
    httpMethod: method,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: { proxy: path.slice(1) },
    stageVariables: null,
    body: body ? Buffer.from(body).toString('base64') : null,
    isBase64Encoded: Boolean(body),
    requestContext: {
      accountId: '000000000000',
      apiId: 'bench',
      protocol: 'HTTP/1.1',
      httpMethod: method,
      identity: { sourceIp: '127.0.0.1' },
      path,
      stage: 'bench',
      requestId: 'bench-cold-start',
      requestTimeEpoch: Date.now(),
      resourceId: 'bench',
      resourcePath: '/{proxy+}',
    },
  };
}

function evaluateTargets(r: Results): Results['targets'] {
  const fmt3 = (x: number) => x.toFixed(3);
  const out: Results['targets'] = [];
  const best = (scenario: string) => Math.max(...r.load.filter((x) => x.scenario === scenario && x.latencyMs === 0).map((x) => x.rps));
  if (r.paired) {
    const gw = best('gateway-proxy-ratelimit');
    const floor = best('bare-proxy');
    const p = r.paired;
    out.push({
      name: 'throughput with auth + request logging + one rate-limit policy',
      goal: '>= 0.5 x bare proxy (at 0 ms upstream latency)',
      measured:
        `${p.medianRatio.toFixed(2)} x: median of ${p.rounds.length} round${p.rounds.length === 1 ? '' : 's'} with the two loaded in turn (${p.rounds.map((x) => x.ratio.toFixed(2)).join(', ')}); ` +
        `best req/s of the tables: ${gw} vs ${floor} = ${(gw / floor).toFixed(2)} x. ` +
        `On this machine a gateway as cheap as the bare proxy would reach ${p.ceilingRatio.toFixed(2)} x (see the machine CPU table)`,
      met: p.medianRatio >= 0.5,
    });
  } else if (r.load.some((x) => x.scenario === 'bare-proxy') && r.load.some((x) => x.scenario === 'gateway-proxy-ratelimit')) {
    const gw = best('gateway-proxy-ratelimit');
    const floor = best('bare-proxy');
    out.push({
      name: 'throughput with auth + request logging + one rate-limit policy',
      goal: '>= 0.5 x bare proxy (best req/s at 0 ms upstream latency)',
      measured: `${gw} vs ${floor} req/s = ${(gw / floor).toFixed(2)} x (one run each; no paired rounds)`,
      met: gw / floor >= 0.5,
    });
  }
  if (r.cpuAtRate) {
    const c = r.cpuAtRate;
    const saturated = r.paired
      ? ` At saturation (the throughput rounds, gateway-proxy-ratelimit at ${r.paired.connections} connections) it is ${fmt3(r.paired.machine.gateway.server)} against ${fmt3(r.paired.machine.bare.server)} ms, each at its own rate.`
      : '';
    out.push({
      name: 'CPU per request, every hot-path feature on (gateway-chat-full)',
      goal: "<= 2 x the bare proxy's, at the same rate",
      measured:
        `${c.medianCpuRatio.toFixed(2)} x at ${c.rate} req/s: ${fmt3(c.medianCpu.gateway)} against ${fmt3(c.medianCpu.bare)} ms, median of ${c.rounds.length} round${c.rounds.length === 1 ? '' : 's'} in turn ` +
        `(${c.rounds.map((x) => x.cpuRatio.toFixed(2)).join(', ')}).${saturated}`,
      met: c.medianCpuRatio <= 2,
    });
  }
  if (r.halfSaturation) {
    out.push({
      name: 'p99 added latency at half of saturation',
      goal: '<= 2 ms',
      measured:
        `${r.halfSaturation.addedP99.toFixed(2)} ms at ${r.halfSaturation.rate} req/s (p99 ${r.halfSaturation.gateway.p99} vs ${r.halfSaturation.direct.p99} ms)` +
        (r.halfSaturation.floor
          ? `. The bare proxy at the same rate: ${r.halfSaturation.floor.addedP99.toFixed(2)} ms alone, ${r.halfSaturation.floor.addedP99WithRecords.toFixed(2)} ms while DynamoDB Local writes as many request-log records`
          : ''),
      met: r.halfSaturation.addedP99 <= 2,
    });
  }
  if (r.streams.length) {
    const worst = r.streams.filter((s) => s.scenario.startsWith('gateway')).reduce((a, b) => (b.ttfbAddedP50 > a.ttfbAddedP50 ? b : a));
    out.push({
      name: 'streaming TTFB added',
      goal: '<= 1 ms',
      measured: `${r.streams
        .filter((s) => s.scenario.startsWith('gateway'))
        .map((s) => `${s.scenario.replace('gateway-', '')} ${s.ttfbAddedP50.toFixed(2)}`)
        .join(', ')} ms (p50)`,
      met: worst.ttfbAddedP50 <= 1,
    });
  }
  if (r.heat) {
    out.push({
      name: `hottest DynamoDB partition at ${r.heat.targetRps.toLocaleString('en-US')} req/s of one workspace`,
      goal: `<= ${r.heat.goalWcuPerPartition} WCU per partition key (half of DynamoDB's 1,000)`,
      measured: r.heat.modes
        .map(
          (m) =>
            `${m.mode}: ${m.hottest ? `${m.hottest.target} \`${m.hottest.partition}\` ${m.hottest.wcuAtTarget} WCU (${m.hottest.wcuAtTargetWithRecordBytes} with 2 KB records)` : 'no writes'}`,
        )
        .join('; '),
      met: r.heat.met,
    });
  }
  if (r.openHarness) {
    const a = r.openHarness.streams.added;
    const within = (gateway: number, bare: number) => gateway <= 2 * Math.max(bare, 0);
    out.push({
      name: 'streaming TTFB and inter-event delay added, every feature on (open harness)',
      goal: '<= 2 x what the bare proxy adds (p50)',
      measured: `TTFB ${a.gateway.ttfbP50} vs ${a.bare.ttfbP50} ms; inter-event ${a.gateway.gapP50} vs ${a.bare.gapP50} ms (p99 ${a.gateway.gapP99} vs ${a.bare.gapP99} ms)`,
      met: within(a.gateway.ttfbP50, a.bare.ttfbP50) && within(a.gateway.gapP50, a.bare.gapP50),
    });
    const soak = r.openHarness.soak;
    if (soak) {
      out.push({
        name: `memory over a ${soak.seconds >= 60 ? `${Math.round(soak.seconds / 60)}-minute` : `${soak.seconds} s`} soak at ${soak.rate} req/s (open harness)`,
        goal: 'no growth after warm-up (<= 0.5 MB/min by linear regression)',
        measured: `gateway ${soak.gateway.plateauMb} MB, ${soak.gateway.growthMbPerMin} MB/min; bare proxy ${soak.bare.plateauMb} MB, ${soak.bare.growthMbPerMin} MB/min`,
        met: soak.gateway.growthMbPerMin <= 0.5,
      });
    }
  }
  const gwBundle = r.bundles.find((b) => b.name === 'gateway');
  if (gwBundle) {
    out.push({
      name: 'gateway bundle size',
      goal: '<= 250 KB minified',
      measured: `${gwBundle.sizeKb} KB loaded at cold start (index.mjs + static chunks); ${gwBundle.totalKb} KB with the chunks loaded on demand`,
      met: gwBundle.sizeKb <= 250,
    });
  }
  if (r.storage.length) {
    const reads = r.storage.map((s) => `${s.scenario}: ${s.readsPerRequest.toFixed(3)}`);
    out.push({
      name: 'storage reads on the warm path',
      goal: '0 per request',
      measured: reads.join('; '),
      met: r.storage.every((s) => s.readsPerRequest === 0),
    });
  }
  return out;
}

function writeCostReadme(r: Results): void {
  const file = resolve(REPO_ROOT, 'bench/README.md');
  const START = '<!-- cost:start -->';
  const END = '<!-- cost:end -->';
  const block = [
    START,
    '',
    `Run of ${r.date}, load average (1/5/15 min) ${r.machine.loadAvgAtStart} at the start, ${r.machine.loadAvgAtEnd} at the end.`,
    '',
    '### Cost per million requests',
    '',
    renderCost(r.cost!),
    '',
    '### Right-sizing on-demand memory',
    '',
    renderRightSizing(r.rightSizing!),
    '',
    END,
  ].join('\n');
  const current = readFileSync(file, 'utf8');
  const next =
    current.includes(START) && current.includes(END)
      ? current.slice(0, current.indexOf(START)) + block + current.slice(current.indexOf(END) + END.length)
      : `${current.trimEnd()}\n\n## Cost and right-sizing (\`npm run bench -- --update-cost\`)\n\n${block}\n`;
  writeFileSync(file, next);
}

function writeReadme(r: Results, tables: string): void {
  const file = resolve(REPO_ROOT, 'bench/README.md');
  const START = '<!-- results:start -->';
  const END = '<!-- results:end -->';
  const m = r.machine;
  const block = [
    START,
    '',
    `Run of ${r.date} (${r.durationS} s): ${m.nproc} × ${m.cpu}, ${m.memoryGb} GB RAM, Node ${m.node}, ${m.os}. ` +
      `Load average (1/5/15 min) ${m.loadAvgAtStart} at the start, ${m.loadAvgAtEnd} at the end` +
      ' (the machine is shared: other jobs ran during the benchmark, see each row).',
    '',
    tables,
    END,
  ].join('\n');
  const current = existsSync(file) ? readFileSync(file, 'utf8') : `# Benchmarks\n\n${START}\n${END}\n`;
  const next =
    current.includes(START) && current.includes(END)
      ? current.slice(0, current.indexOf(START)) + block + current.slice(current.indexOf(END) + END.length)
      : `${current.trimEnd()}\n\n${block}\n`;
  writeFileSync(file, next);
}
