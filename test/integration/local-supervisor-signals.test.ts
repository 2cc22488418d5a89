import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';

// systemd, Docker, pm2 and CI runners signal the top process only (a terminal's Ctrl-C
// signals the whole group). `npm start` is npm > node (its shell execs node) > DynamoDB
// Local's JVM, esbuild and the JVM's watchdog shell: whatever the top process gets, nothing
// may keep serving.

const ROOT = resolve(import.meta.dirname, '../..');
const scratch = mkdtempSync(join(tmpdir(), 'gateway-signals-'));
const started: ChildProcess[] = [];
afterAll(() => {
  for (const child of started) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    try {
      process.kill(-child.pid!, 'SIGKILL'); // a case that made its own process group
    } catch {
      child.kill('SIGKILL');
    }
  }
  rmSync(scratch, { recursive: true, force: true });
});

/** The generous bound for "stops within 12 s", on a loaded two-core machine. */
const STOP_BOUND_MS = 12_000;

function environment(data: string, viaNpm: boolean): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: '0',
    HOST: '127.0.0.1',
    GATEWAY_DATA_DIR: data,
    GATEWAY_ADMIN_KEY: '',
    GATEWAY_DYNAMODB_ENDPOINT: '',
    GATEWAY_KMS_ENDPOINT: '',
    GATEWAY_TABLE_PREFIX: '',
    POWERTOOLS_LOG_LEVEL: 'ERROR',
    // What is under test is the stop, not the loading of the functions' code.
    GATEWAY_LOAD_HANDLERS: 'on-first-use',
  };
  // Run directly, the gateway must not take this test run's own npm variables as its npm.
  if (!viaNpm) for (const name of Object.keys(env)) if (name.startsWith('npm_')) delete env[name];
  return env;
}

/** `npm start` (or the node command it runs) in a data folder of its own; resolves once it serves. */
async function start(viaNpm: boolean, ownGroup: boolean): Promise<{ top: ChildProcess; url: string; data: string }> {
  const data = mkdtempSync(join(scratch, 'data-'));
  const [command, args] = viaNpm ? ['npm', ['start']] : [process.execPath, ['--import', 'tsx', 'infra/local/main.ts']];
  const top = spawn(command, args as string[], { cwd: ROOT, env: environment(data, viaNpm), stdio: ['ignore', 'pipe', 'pipe'], detached: ownGroup });
  started.push(top);
  let output = '';
  const url = await new Promise<string>((resolveUrl, reject) => {
    const onData = (d: Buffer) => {
      output += d.toString();
      const match = /running at (http:\/\/\S+)\/v1/.exec(output);
      if (match) resolveUrl(match[1]!);
    };
    top.stdout!.on('data', onData);
    top.stderr!.on('data', onData);
    top.once('exit', (code) => reject(new Error(`exited with ${code} before serving:\n${output}`)));
  });
  return { top, url, data };
}

/** State and parent pid of every process, from /proc. */
function processTable(): Map<number, { state: string; ppid: number }> {
  const table = new Map<number, { state: string; ppid: number }>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const [state = '', ppid = ''] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      table.set(Number(name), { state, ppid: Number(ppid) });
    } catch {
      /* ended while listed */
    }
  }
  return table;
}

/** The process and all its descendants, now. */
function treeOf(pid: number): number[] {
  const table = processTable();
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) for (const [child, { ppid }] of table) if (ppid === tree[i]) tree.push(child);
  return tree;
}

const commandOf = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').slice(0, 160);
  } catch {
    return '(gone)';
  }
};

/** Running, not a zombie waiting for its parent to reap it. */
function alive(pid: number): boolean {
  if (!existsSync(`/proc/${pid}/stat`)) return false;
  const stat = processTable().get(pid);
  return stat !== undefined && stat.state !== 'Z';
}

/** Milliseconds until every pid has ended; throws with those left after `boundMs`. */
async function allEnded(pids: number[], boundMs: number): Promise<number> {
  const since = performance.now();
  while (performance.now() - since < boundMs) {
    if (!pids.some(alive)) return performance.now() - since;
    await sleep(100);
  }
  throw new Error(`still running ${boundMs} ms later: ${pids.filter(alive).map(commandOf).join(' | ')}`);
}

const portClosed = (url: string) =>
  new Promise<boolean>((done) => {
    const { hostname, port } = new URL(url);
    const socket = connect(Number(port), hostname);
    socket.once('connect', () => {
      socket.destroy();
      done(false);
    });
    socket.once('error', () => done(true));
  });

type Delivery = 'to the top process' | "to its process group (a terminal's Ctrl-C)";

/**
 * Starts the gateway, signals it, and checks that every process of its tree has ended within
 * the bound and the port is closed; `orderly`: the gateway stopped itself (its `running`
 * marker, removed only by a clean stop, is gone), rather than being killed.
 */
async function expectTreeEnds(how: 'npm start' | 'node infra/local/main.ts', signal: NodeJS.Signals, delivery: Delivery, orderly: boolean): Promise<void> {
  const toGroup = delivery !== 'to the top process';
  const { top, url, data } = await start(how === 'npm start', toGroup);
  const tree = treeOf(top.pid!);
  const commands = tree.map(commandOf).join(' | ');
  // The tree is what the test believes it is: the gateway and DynamoDB Local's JVM in it.
  expect(commands).toContain('infra/local/main.ts');
  expect(commands).toContain('DynamoDBLocal');
  if (how === 'npm start') expect(commands).toMatch(/^npm/);
  expect(existsSync(join(data, 'running'))).toBe(true);
  const jvmScratch = scratchDirOf(tree.find((pid) => commandOf(pid).includes('DynamoDBLocal'))!);
  expect(
    readdirSync(jvmScratch).some((f) => f.endsWith('libsqlite4java.so')),
    'DynamoDB Local copied its library into its own folder',
  ).toBe(true);

  process.kill(toGroup ? -top.pid! : top.pid!, signal);
  const tookMs = await allEnded(tree, STOP_BOUND_MS);
  expect(tookMs).toBeLessThan(STOP_BOUND_MS);
  expect(await portClosed(url)).toBe(true);
  expect(existsSync(join(data, 'running')), 'the running marker says whether the stop was orderly').toBe(!orderly);
  expect(existsSync(jvmScratch), "the JVM's temporary folder is removed, however the JVM ended").toBe(false);
}

/** The java.io.tmpdir the JVM was started with (the gateway sets it in JAVA_TOOL_OPTIONS). */
function scratchDirOf(jvm: number): string {
  const options = readFileSync(`/proc/${jvm}/environ`, 'utf8')
    .split('\0')
    .find((v) => v.startsWith('JAVA_TOOL_OPTIONS='));
  const dir = /-Djava\.io\.tmpdir=(\S+)/.exec(options ?? '')?.[1];
  expect(dir, `JAVA_TOOL_OPTIONS of the JVM: ${options}`).toBeDefined();
  return dir!;
}

// One gateway (and JVM) at a time: a two-core machine runs other test files beside this one.
describe('a supervisor stops `npm start` by signalling its top process', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    '%s to npm: the gateway stops in order, every process of its tree ends and the port closes',
    (signal) => expectTreeEnds('npm start', signal, 'to the top process', true),
    120_000,
  );

  it(
    'Ctrl-C in a terminal (SIGINT to the whole group, so node gets it from npm too): one orderly stop',
    () => expectTreeEnds('npm start', 'SIGINT', "to its process group (a terminal's Ctrl-C)", true),
    120_000,
  );
});

describe('the top process is killed outright: what it started does not serve on', () => {
  it('SIGKILL to npm: the gateway sees npm gone and stops in order', () => expectTreeEnds('npm start', 'SIGKILL', 'to the top process', true), 120_000);

  it('SIGKILL to node: its watchdog ends DynamoDB Local', () => expectTreeEnds('node infra/local/main.ts', 'SIGKILL', 'to the top process', false), 120_000);
});
