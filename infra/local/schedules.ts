import { resolve } from 'node:path';
import { WORKERS, type WorkerSpec } from '../workflows/registry';
import { lambdaContext } from './lambda-context';

/**
 * The scheduled workers of infra/workflows/registry.ts (an EventBridge rate rule in AWS),
 * each called once at start-up and then every `intervalMs`, one pass at a time. The run
 * reconciler is one: after a crash, the first pass ends the runs the dead process held.
 */

export type ScheduledHandler = (event: unknown, context: unknown) => Promise<unknown>;

export interface LocalSchedules {
  stop(): Promise<void>;
}

const REPO_ROOT = resolve(import.meta.dirname, '../..');

async function importHandler(spec: WorkerSpec): Promise<ScheduledHandler> {
  const mod = (await import(resolve(REPO_ROOT, spec.entry))) as { handler?: ScheduledHandler };
  if (typeof mod.handler !== 'function') throw new Error(`${spec.entry} exports no handler`);
  return mod.handler;
}

export function startLocalSchedules(options: {
  intervalMs: number;
  workers?: readonly WorkerSpec[];
  loadHandler?: (spec: WorkerSpec) => Promise<ScheduledHandler>;
  report?: (message: string, detail?: unknown) => void;
}): LocalSchedules {
  const report =
    options.report ??
    ((message: string, detail?: unknown) => process.stderr.write(`[local schedules] ${message}${detail === undefined ? '' : ` ${JSON.stringify(detail)}`}\n`));
  const controller = new AbortController();
  const loops = (options.workers ?? WORKERS)
    .filter((w) => w.kind === 'scheduled')
    .map(async (spec) => {
      const context = lambdaContext({
        functionName: `ai-gateway-local-${spec.name}`,
        timeoutSeconds: spec.timeoutSeconds,
        memoryMb: 512,
        region: 'us-east-1',
        accountId: '000000000000',
      });
      while (!controller.signal.aborted) {
        try {
          const handler = await (options.loadHandler ?? importHandler)(spec);
          await handler({ source: 'aws.events', 'detail-type': 'Scheduled Event', time: new Date().toISOString(), detail: {} }, context);
        } catch (err) {
          report(`${spec.name} failed`, { error: (err as Error).message });
        }
        await pause(options.intervalMs, controller.signal);
      }
    });
  return {
    async stop() {
      controller.abort();
      await Promise.allSettled(loops);
    },
  };
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((r) => {
    if (signal.aborted) return r();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      r();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
