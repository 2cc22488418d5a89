import { log } from './logger';

/**
 * The process's last resort: an error thrown in a callback nothing awaits (a stray timer or
 * stream listener) or a promise rejected with nobody listening is logged, and the process
 * goes on serving the requests in flight instead of dying with all of them. Installed once
 * per process (thread), whichever entry loads first; on AWS the Lambda runtime's own
 * handlers still run after this one and decide what becomes of the environment.
 */

const INSTALLED = Symbol.for('ai-gateway.last-resort');

function describe(err: unknown): Record<string, unknown> {
  // Name, message and stack only: no error in the gateway carries credentials in these.
  return err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : { value: String(err) };
}

export function installLastResort(proc: NodeJS.Process = process): void {
  const flags = globalThis as { [INSTALLED]?: boolean };
  if (flags[INSTALLED]) return;
  flags[INSTALLED] = true;
  proc.on('uncaughtException', (err, origin) => log.error('uncaught exception; the process keeps serving', { origin, error: describe(err) }));
  proc.on('unhandledRejection', (reason) => log.error('unhandled promise rejection; the process keeps serving', { error: describe(reason) }));
}
