/**
 * Profile the gateway's hot path (issue 12, item 5): `npx tsx bench/profile.ts [scenario]
 * [--connections=16 | --rate=<req/s, evenly spaced>] [--seconds=10] [--root=<checkout>] [--bundles]`.
 * With --bundles the endpoint functions run from production bundles of the checkout
 * (`--root`, default this one) built with its own esbuild options but identifiers kept, so
 * the profile names functions, as the benchmark's bundles run them; without it, from the
 * TypeScript sources under tsx (names and files, plus the loader's cost). Starts the same process tree as bench/run.ts with the
 * gateway under `node --cpu-prof`, drives one scenario (default gateway-proxy-ratelimit,
 * upstream latency 0 ms), stops the gateway so V8 writes the profile, and prints a summary
 * (self time by area and by function, inclusive time of own code). The raw .cpuprofile
 * (open it in Chrome DevTools) and the summary stay in bench/.tmp/prof/. `PROF_INTERVAL=<µs>` sets
 * V8's sampling interval (default 1000).
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const { startDynamoDbLocal } = await import('../infra/local/dynamodb');
const { setUpGateway } = await import('./lib/admin');
const { renderProfile, summariseProfile } = await import('./lib/cpuprofile');
const { runLoad, runPaced } = await import('./lib/load');
const { spawnTsJson, startChildGateway, TMP_DIR, loadAverage, REPO_ROOT } = await import('./lib/procs');
const { requestFor, SCENARIOS, STREAM_ONLY_SCENARIOS } = await import('./lib/scenarios');
type Upstreams = import('./lib/scenarios').Upstreams;
type Scenario = import('./lib/scenarios').Scenario;

const args = process.argv.slice(2);
const scenario = (args.find((a) => !a.startsWith('--')) ?? 'gateway-proxy-ratelimit') as Scenario;
const known: readonly Scenario[] = [...SCENARIOS, ...STREAM_ONLY_SCENARIOS];
if (!known.includes(scenario)) throw new Error(`unknown scenario ${scenario}; one of ${known.join(', ')}`);
const flag = (name: string, fallback: number) => Number(args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const connections = flag('connections', 16);
const seconds = flag('seconds', 10);
const stream = args.includes('--stream');
const rate = flag('rate', 0);

const dir = resolve(TMP_DIR, 'prof', scenario + (stream ? '-stream' : ''));
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });

const dynamo = await startDynamoDbLocal(null);
const upstream = await spawnTsJson<Upstreams>('bench/upstream.ts');
const root = args.find((a) => a.startsWith('--root='))?.slice('--root='.length);
const gw = await startChildGateway({
  name: 'profile',
  dynamodbEndpoint: dynamo.endpoint,
  nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`, ...(process.env.PROF_INTERVAL ? [`--cpu-prof-interval=${process.env.PROF_INTERVAL}`] : [])],
  root,
  ...(args.includes('--bundles') ? { functionBundles: await readableBundles(resolve(root ?? REPO_ROOT), resolve(dir, 'bundles')) } : {}),
});
try {
  const setup = await setUpGateway(gw.url, gw.adminKey, upstream.info);
  const spec = requestFor(
    scenario,
    { upstreams: upstream.info, bare: { openai0: '', openai50: '' }, gateway: gw.url, key: setup.key, limitedKey: setup.limitedKey, full: setup.full },
    0,
    stream,
  );
  await runLoad(spec, { connections, durationS: 3, record: false });
  const before = loadAverage();
  const r =
    rate > 0
      ? await runPaced(spec, { rate, durationS: seconds, warmupS: 2, serverPid: gw.pid })
      : await runLoad(spec, { connections, durationS: seconds, serverPid: gw.pid });
  const shape = rate > 0 ? `paced at ${rate} req/s` : `c=${connections}`;
  process.stdout.write(
    `${scenario}${stream ? ' (stream)' : ''} ${shape}: ${r.rps} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, CPU ${r.serverCpuMsPerReq} ms/req, errors ${r.errors} (load ${before})\n`,
  );
} finally {
  await gw.stop();
  await upstream.stop();
  await dynamo.stop();
}
const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
if (!file) throw new Error(`no profile written in ${dir}`);
const summary = renderProfile(summariseProfile(resolve(dir, file), 30));
writeFileSync(resolve(dir, 'summary.txt'), `${summary}\n`);
process.stdout.write(`${summary}\n\nraw profile: ${resolve(dir, file)}\n`);
process.exit(0);

/**
 * Every endpoint group of `checkout` bundled as it deploys them (its own infra/bundling.ts),
 * identifiers not minified, into `out`; the folder the local runtime takes as
 * GATEWAY_FUNCTION_BUNDLES.
 */
async function readableBundles(checkout: string, out: string): Promise<string> {
  const { build } = await import('esbuild');
  const { esbuildOptionsFor } = (await import(resolve(checkout, 'infra/bundling.ts'))) as typeof import('../infra/bundling');
  const { ENDPOINT_GROUPS } = (await import(resolve(checkout, 'infra/endpoint-groups.ts'))) as typeof import('../infra/endpoint-groups');
  for (const group of ENDPOINT_GROUPS) {
    const options = esbuildOptionsFor(resolve(checkout, group.entry), resolve(out, group.name));
    await build({ ...options, minify: false, minifyWhitespace: true, minifySyntax: true, keepNames: true, absWorkingDir: checkout });
  }
  return out;
}
