import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

/** How often a gateway started by npm checks that npm is still there. */
const PARENT_CHECK_MS = 1_000;

/**
 * `npm start` execs the gateway in npm's shell (package.json), so npm is this process's
 * parent and passes SIGTERM and SIGINT on to it. A SIGKILL to npm passes nothing on: started
 * by npm, this process watches npm and calls `onGone` once it has ended. Run directly, the
 * gateway gets signals itself, and backgrounding it (`nohup node ... &`) keeps working.
 */
export function stopWithParent(onGone: () => void): void {
  if (!process.env.npm_lifecycle_event) return;
  // process.ppid is read once, at start-up: the parent's end shows in its pid, not in ppid.
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (isAlive(parent)) return;
    clearInterval(timer);
    onGone();
  }, PARENT_CHECK_MS);
  timer.unref();
}

/** A process that has ended but is not reaped yet (a zombie) counts as gone. */
function isAlive(pid: number): boolean {
  try {
    if (existsSync('/proc/self/stat')) return procState(pid) !== 'Z';
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The state letter of /proc/<pid>/stat (after the command name, which may hold spaces). */
function procState(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.charAt(stat.lastIndexOf(')') + 2);
}

/**
 * A child that must not outlive this process however it ends (SIGKILL and crashes
 * included, where no exit handler runs): a small shell holds a pipe from this process and,
 * once the pipe closes, waits `settleSeconds` (DynamoDB Local commits the writes it has
 * received, as DynamoDB on AWS would), sends the child SIGTERM, then SIGKILL if it is still
 * there after `graceSeconds`, and then removes `scratchDir` (the child's own temporary
 * folder), if given. Returns the call that retires the watchdog, for a child stopped in
 * order. Not on Windows (no `sh`); there the exit handler alone stops the child.
 */
export function killWithThisProcess(
  childPid: number,
  { settleSeconds, graceSeconds, scratchDir }: { settleSeconds: number; graceSeconds: number; scratchDir?: string },
): () => void {
  if (process.platform === 'win32') return () => undefined;
  const script = [
    'while read -r _; do :; done',
    `sleep ${settleSeconds}`,
    'kill -TERM "$1" 2>/dev/null',
    'i=0',
    `while kill -0 "$1" 2>/dev/null && [ "$i" -lt ${graceSeconds * 10} ]; do sleep 0.1; i=$((i+1)); done`,
    'kill -KILL "$1" 2>/dev/null',
    // A process killed by now writes nothing more; the wait (bounded: a zombie answers kill -0
    // until reaped) only lets the signal land.
    'if [ -n "$2" ]; then i=0; while kill -0 "$1" 2>/dev/null && [ "$i" -lt 20 ]; do sleep 0.1; i=$((i+1)); done; rm -rf -- "$2"; fi',
  ].join('\n');
  const watchdog = spawn('sh', ['-c', script, 'watchdog', String(childPid), scratchDir ?? ''], { stdio: ['pipe', 'ignore', 'ignore'] });
  watchdog.on('error', () => undefined);
  watchdog.stdin?.on('error', () => undefined);
  // Neither the watchdog nor its pipe keeps this process's event loop alive.
  watchdog.unref();
  (watchdog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return () => {
    if (watchdog.exitCode === null && watchdog.signalCode === null) watchdog.kill('SIGKILL');
  };
}
