import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const REPO_ROOT = resolve(import.meta.dirname, '../..');
export const TMP_DIR = resolve(REPO_ROOT, 'bench/.tmp');

export interface Child {
  proc: ChildProcess;
  pid: number;
  stop(): Promise<void>;
}

const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

function stopper(proc: ChildProcess): () => Promise<void> {
  return () =>
    new Promise<void>((r) => {
      children.delete(proc);
      if (proc.exitCode !== null || proc.signalCode !== null) return r();
      proc.once('exit', () => r());
      proc.kill('SIGTERM');
      setTimeout(() => proc.kill('SIGKILL'), 5000).unref();
    });
}

/** A TypeScript module in its own `node --import tsx` process; resolves with its first stdout line (JSON). */
export async function spawnTsJson<T>(file: string, env: Record<string, string> = {}, nodeArgs: string[] = []): Promise<Child & { info: T }> {
  const proc = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', resolve(REPO_ROOT, file)], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(proc);
  let out = '';
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  const info = await new Promise<T>((resolveInfo, reject) => {
    const timer = setTimeout(() => reject(new Error(`${file} did not start:\n${err}`)), 60_000);
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        try {
          resolveInfo(JSON.parse(out.slice(0, nl)) as T);
        } catch (e) {
          reject(e as Error);
        }
      }
    });
    proc.once('exit', (code) => reject(new Error(`${file} exited with ${code}:\n${err}`)));
  });
  return { proc, pid: proc.pid!, info, stop: stopper(proc) };
}

export interface ChildGateway extends Child {
  url: string;
  adminKey: string;
  logFile: string;
}

/**
 * A local gateway in its own process (`node --import tsx infra/local/main.ts`, what `npm
 * start` runs), in memory, on a free port, sharing the bench's DynamoDB Local under its own
 * table prefix. Its stdout (one structured log line and one EMF document per request, as on
 * Lambda) goes to a file, as Lambda's goes to the runtime's pipe, so the bench process does
 * not spend CPU reading it.
 */
export async function startChildGateway(opts: {
  name: string;
  dynamodbEndpoint: string;
  env?: Record<string, string>;
  nodeArgs?: string[];
  /** Another checkout of the repository to run the gateway from (bench/ab.ts); default this one. */
  root?: string;
  /**
   * Folder of production bundles (bench/lib/cold-start.ts `bundleAll`): the endpoint
   * functions run from those, with source maps on, as deployed (GATEWAY_FUNCTION_BUNDLES).
   * Without it they run from the TypeScript sources under tsx.
   */
  functionBundles?: string;
}): Promise<ChildGateway> {
  const root = opts.root ?? REPO_ROOT;
  const logFile = resolve(TMP_DIR, `gateway-${opts.name}.log`);
  const fd = openSync(logFile, 'w');
  // The V8 options of the Lambda functions with bundles, else those `npm start` runs with:
  // the checkout's own, so an A/B of two checkouts compares their options too.
  const { LAMBDA_NODE_OPTIONS, NODE_HEAP_OPTIONS } = (await import(resolve(root, 'infra/node-options.ts'))) as typeof import('../../infra/node-options');
  const nodeOptions = opts.functionBundles ? LAMBDA_NODE_OPTIONS.split(' ') : NODE_HEAP_OPTIONS;
  const args = [...nodeOptions, ...(opts.nodeArgs ?? []), '--import', 'tsx', resolve(root, 'infra/local/main.ts')];
  const proc = spawn(process.execPath, args, {
    cwd: root,
    env: {
      ...process.env,
      PORT: '0',
      GATEWAY_DATA_DIR: 'memory',
      GATEWAY_DYNAMODB_ENDPOINT: opts.dynamodbEndpoint,
      GATEWAY_TABLE_PREFIX: `bench-${opts.name}-`,
      GATEWAY_TRUSTED_HOSTS: '127.0.0.1,localhost',
      // `npm start` keeps EMF metrics off (noise on a terminal); Lambda has them on.
      POWERTOOLS_METRICS_DISABLED: 'false',
      ...(opts.functionBundles ? { GATEWAY_FUNCTION_BUNDLES: opts.functionBundles } : {}),
      ...opts.env,
    },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  children.add(proc);
  const deadline = Date.now() + 90_000;
  for (;;) {
    const text = readFileSync(logFile, 'utf8');
    const url = /running at (http:\/\/\S+)\/v1/.exec(text)?.[1];
    const adminKey = /Admin key \(x-gateway-api-key\): (\S+)/.exec(text)?.[1];
    if (url && adminKey) return { proc, pid: proc.pid!, url, adminKey, logFile, stop: stopper(proc) };
    if (proc.exitCode !== null) throw new Error(`gateway ${opts.name} exited:\n${text.slice(-3000)}`);
    if (Date.now() > deadline) throw new Error(`gateway ${opts.name} did not start:\n${text.slice(-3000)}`);
    await sleep(100);
  }
}

/** Resident set size of a process in MB (Linux /proc). */
export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return Math.round((kb / 1024) * 10) / 10;
}

export function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

/**
 * Scheduler time of a process so far, in ms (Linux /proc/<pid>/task/<tid>/schedstat): on a
 * CPU, and runnable but waiting for one (preempted by other processes). `mainThread` reads
 * only the thread that runs JavaScript; otherwise every thread is summed (a JVM's).
 */
export function schedMs(pid: number, mainThread: boolean): { running: number; waiting: number } {
  const tids = mainThread ? [String(pid)] : readdirSync(`/proc/${pid}/task`);
  let running = 0;
  let waiting = 0;
  for (const tid of tids) {
    try {
      const [onCpuNs, waitNs] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
      running += onCpuNs! / 1e6;
      waiting += waitNs! / 1e6;
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return { running, waiting };
}

/**
 * Waits until a process is nearly idle (under `maxCpuPct` of a core over 250 ms), at most
 * `maxMs`; returns how long it waited. Used so that a phase does not start while DynamoDB
 * Local still works through the previous phase's request-log writes.
 */
export async function settle(pid: number, maxCpuPct = 10, maxMs = 20_000): Promise<number> {
  const started = Date.now();
  for (;;) {
    const before = cpuMs(pid);
    await sleep(250);
    if (((cpuMs(pid) - before) / 250) * 100 < maxCpuPct || Date.now() - started > maxMs) return Date.now() - started;
  }
}

/** CPU time (user + system) a process has used so far, in ms (Linux /proc). */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may contain spaces) start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / CLOCK_TICKS;
}
const CLOCK_TICKS = 100;
