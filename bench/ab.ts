/**
 * Before/after comparison of gateway code on a noisy machine: two gateway processes, one
 * run from a baseline copy of the repository (`--base=<dir>`, e.g. made with
 * `git stash` + copy, or `git archive HEAD | tar -x -C <dir>` and a node_modules symlink)
 * and one from this checkout, loaded in alternation, several short rounds each, so
 * background load hits both alike. Reports medians of req/s, p50/p99 and the gateway
 * process's CPU time per request (user + system), the steadiest of the four when other
 * jobs share the CPUs.
 *
 *   npx tsx bench/ab.ts --base=/tmp/gateway-base [--after=<dir>, default this checkout] [--scenarios=gateway-proxy,...]
 *                       [--rounds=5] [--seconds=4] [--connections=16 | --rate=<req/s>] [--stream] [--bundles] [--ttfb[=200]]
 *
 * With --bundles both sides run from their own checkout's production bundles, with the
 * Lambda NODE_OPTIONS, as `npm run bench` runs the gateway; without it, from the
 * TypeScript sources under tsx.
 *
 * With --ttfb (implies --stream) each round sends N pairs of streamed requests one after
 * the other (default 200), one request of a pair to each side, and reports the median
 * time to the first body byte (the figure of the benchmark's streaming table) and the
 * median of the pairs' differences, instead of a load run.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
export {};

const { startDynamoDbLocal } = await import('../infra/local/dynamodb');
const { setUpGateway } = await import('./lib/admin');
const { median, round, runLoad, runPaced } = await import('./lib/load');
// `round` is shadowed by the round counter inside the loop.
const round2 = (x: number) => round(x);
const { loadAverage, REPO_ROOT, spawnTsJson, startChildGateway } = await import('./lib/procs');
const { resolve } = await import('node:path');
const { execFileSync } = await import('node:child_process');
const { requestFor } = await import('./lib/scenarios');
const { timeStream } = await import('./lib/streams');
const http = await import('node:http');
type Upstreams = import('./lib/scenarios').Upstreams;
type Scenario = import('./lib/scenarios').Scenario;
type LoadResult = import('./lib/load').LoadResult;

const args = process.argv.slice(2);
const opt = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const base = opt('base');
if (!base) throw new Error('--base=<dir of the baseline checkout> is required');
const scenarios = (opt('scenarios') ?? 'gateway-proxy,gateway-chat-openai,gateway-chat-anthropic,gateway-proxy-ratelimit').split(',') as Scenario[];
const rounds = Number(opt('rounds') ?? 5);
const seconds = Number(opt('seconds') ?? 4);
const connections = Number(opt('connections') ?? 16);
const ttfbArg = args.find((a) => a === '--ttfb' || a.startsWith('--ttfb='));
const ttfbSamples = ttfbArg ? Number(ttfbArg.split('=')[1] ?? 200) : 0;
const stream = args.includes('--stream') || ttfbSamples > 0;
const bundles = args.includes('--bundles');
/** Evenly spaced requests at this rate instead of a closed loop of `connections`: CPU per request at the same rate on both sides. */
const rate = Number(opt('rate') ?? 0);

/** Build a checkout's production bundles with its own bench code; returns their folder. */
function bundlesOf(root: string): string {
  const code = `await (await import(${JSON.stringify(resolve(root, 'bench/lib/cold-start.ts'))})).bundleAll()`;
  execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', code], { cwd: root, stdio: 'inherit' });
  return resolve(root, 'bench/.tmp/bundles');
}

const dynamo = await startDynamoDbLocal(null);
const upstream = await spawnTsJson<Upstreams>('bench/upstream.ts');
const sides = {
  before: await startChildGateway({
    name: 'ab-before',
    dynamodbEndpoint: dynamo.endpoint,
    root: base,
    ...(bundles ? { functionBundles: bundlesOf(base) } : {}),
  }),
  after: await startChildGateway({
    name: 'ab-after',
    dynamodbEndpoint: dynamo.endpoint,
    root: opt('after'),
    ...(bundles ? { functionBundles: bundlesOf(opt('after') ?? REPO_ROOT) } : {}),
  }),
};
const results: Record<string, Record<'before' | 'after', LoadResult[]>> = {};
const ttfbs: Record<string, Record<'before' | 'after' | 'diff', number[]>> = {};
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

async function ttfbOf(spec: ReturnType<typeof requestFor>): Promise<number> {
  const s = await timeStream(agent, spec);
  if (s.error || s.status !== 200) throw new Error(`stream failed: ${s.status} ${s.error ?? ''}`);
  return s.ttfb;
}

/**
 * `n` pairs of streamed requests, one to each side back to back (which side goes first
 * alternates): both sides of a pair meet the same background load, so the median of the
 * pairs' differences is steadier than either side's median.
 */
async function pairedTtfb(s: Scenario, n: number) {
  const before: number[] = [];
  const after: number[] = [];
  const diff: number[] = [];
  for (let i = 0; i < n; i++) {
    const first = i % 2 === 0 ? 'before' : 'after';
    const a = await ttfbOf(specs[first](s));
    const b = await ttfbOf(specs[first === 'before' ? 'after' : 'before'](s));
    const [tb, ta] = first === 'before' ? [a, b] : [b, a];
    before.push(tb);
    after.push(ta);
    diff.push(ta - tb);
  }
  return { before: median(before), after: median(after), diff: median(diff) };
}

const specs = {} as Record<'before' | 'after', (s: Scenario) => ReturnType<typeof requestFor>>;
try {
  for (const side of ['before', 'after'] as const) {
    const gw = sides[side];
    const setup = await setUpGateway(gw.url, gw.adminKey, upstream.info);
    specs[side] = (s) =>
      requestFor(
        s,
        { upstreams: upstream.info, bare: { openai0: '', openai50: '' }, gateway: gw.url, key: setup.key, limitedKey: setup.limitedKey, full: setup.full },
        0,
        stream,
      );
    for (const s of scenarios) await runLoad(specs[side](s), { connections, durationS: 2, record: false });
  }
  for (let round = 0; round < rounds; round++) {
    for (const s of scenarios) {
      if (ttfbSamples) {
        const r = await pairedTtfb(s, ttfbSamples);
        const t = (ttfbs[s] ??= { before: [], after: [], diff: [] });
        t.before.push(r.before);
        t.after.push(r.after);
        t.diff.push(r.diff);
        process.stdout.write(
          `round ${round + 1} ${s}: TTFB p50 before ${round2(r.before)}, after ${round2(r.after)}, paired difference ${round2(r.diff)} ms (load ${loadAverage()})\n`,
        );
        continue;
      }
      // Alternate which side goes first, so a drift in background load does not favour one.
      const order = round % 2 === 0 ? (['before', 'after'] as const) : (['after', 'before'] as const);
      for (const side of order) {
        const r =
          rate > 0
            ? await runPaced(specs[side](s), { rate, durationS: seconds, warmupS: 1, serverPid: sides[side].pid })
            : await runLoad(specs[side](s), { connections, durationS: seconds, serverPid: sides[side].pid });
        (results[s] ??= { before: [], after: [] })[side].push(r);
        process.stdout.write(
          `round ${round + 1} ${s} ${side}: ${r.rps} req/s, p50 ${r.p50}, p99 ${r.p99} ms, CPU ${r.serverCpuMsPerReq} ms/req (load ${loadAverage()})\n`,
        );
      }
    }
  }
} finally {
  await sides.before.stop();
  await sides.after.stop();
  await upstream.stop();
  await dynamo.stop();
}

if (ttfbSamples) {
  process.stdout.write(
    `\nmedians of ${rounds} rounds x ${ttfbSamples} pairs of sequential streams\n| scenario | TTFB p50 before | TTFB p50 after | paired difference, median | paired difference by round |\n|---|---|---|---|---|\n`,
  );
  for (const s of scenarios) {
    const { before, after, diff } = ttfbs[s]!;
    const list = [...diff]
      .sort((a, b) => a - b)
      .map(round2)
      .join(', ');
    process.stdout.write(`| ${s} | ${round2(median(before))} | ${round2(median(after))} | ${round2(median(diff))} | ${list} |\n`);
  }
  process.exit(0);
}
process.stdout.write(`\nmedians of ${rounds} rounds x ${seconds} s, ${rate > 0 ? `paced at ${rate} req/s` : `c=${connections}`}${stream ? ', SSE' : ''}\n`);
process.stdout.write(
  '| scenario | req/s before | req/s after | p50 before | p50 after | p99 before | p99 after | CPU ms/req before | CPU ms/req after | CPU change |\n|---|---|---|---|---|---|---|---|---|---|\n',
);
for (const s of scenarios) {
  const m = (side: 'before' | 'after', f: (r: LoadResult) => number) => round(median(results[s]![side].map(f)));
  const cpuB = m('before', (r) => r.serverCpuMsPerReq!);
  const cpuA = m('after', (r) => r.serverCpuMsPerReq!);
  process.stdout.write(
    `| ${s} | ${m('before', (r) => r.rps)} | ${m('after', (r) => r.rps)} | ${m('before', (r) => r.p50)} | ${m('after', (r) => r.p50)} | ${m('before', (r) => r.p99)} | ${m('after', (r) => r.p99)} | ${cpuB} | ${cpuA} | ${(((cpuA - cpuB) / cpuB) * 100).toFixed(0)} % |\n`,
  );
}
process.exit(0);
