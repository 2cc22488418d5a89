import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { ExecutionAbortedError, ExecutionError, ExecutionTimeoutError, type StateMachine } from 'aws-local-stepfunctions';
import { stateMachineName, type WorkerSpec } from '../../workflows/registry';
import { lambdaContext } from '../lambda-context';
import { executionArn, functionName, type LocalMachine, type LocalPlacement } from './machines';
import type { ExecutionFile } from './persistence';
import type { TaskTokens } from './task-tokens';

export type WorkerHandler = (event: unknown, context: unknown) => Promise<unknown>;

export type Status = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'ABORTED';

export interface Execution {
  arn: string;
  name: string;
  machine: LocalMachine;
  input: string;
  status: Status;
  startDate: Date;
  stopDate?: Date;
  output?: string;
  error?: string;
  cause?: string;
  /** Ours: aborting it rejects the task in flight (clears the library's task timer). */
  controller: AbortController;
  abortRun?: () => void;
  done?: Promise<void>;
  /** History events so far, counted as AWS counts them (see historyWeight). */
  historyEvents: number;
  /** Set when the count passed the limit: the run was aborted to fail the execution. */
  historyExceeded?: boolean;
}

/** The library's marker properties: a stopped execution's errors are neither retried nor caught. */
export class StoppedError extends Error {
  readonly isRetryable = false;
  readonly isCatchable = false;
  constructor() {
    super('The execution was stopped.');
    this.name = 'States.Runtime';
  }
}

export interface ExecutionsOptions {
  placement: LocalPlacement;
  workers: readonly WorkerSpec[];
  /** Loads a worker's handler (default: import its entry module and take `handler`). */
  loadWorker?: (spec: WorkerSpec) => Promise<WorkerHandler>;
  tokens: TaskTokens;
  /** Where running executions are kept across restarts, or null (in memory). */
  file: ExecutionFile | null;
  report: (message: string, detail?: unknown) => void;
  /** History events an execution may have before it fails (AWS: 25,000). */
  historyLimit?: number;
}

/** One event of the library's log (its type is not exported). */
type EventLog = ReturnType<StateMachine['run']>['eventLogs'] extends AsyncGenerator<infer E> ? E : never;

/** Step Functions' limit on one standard execution's history. */
export const AWS_HISTORY_LIMIT = 25_000;

/**
 * The events AWS records for one of the library's events: a state's entry and exit are one
 * each; a Task state also records TaskScheduled, TaskStarted and TaskSucceeded (or Failed),
 * three more for each attempt (a retry is a new attempt).
 */
function historyWeight(event: EventLog): number {
  switch (event.type) {
    case 'StateEntered':
      return event.state.type === 'Task' ? 4 : 1;
    case 'StateRetried':
      return 3;
    default:
      return 1;
  }
}

const TOKEN_SENTINEL_PREFIX = 'local-task-token-placeholder:';
const REPO_ROOT = resolve(import.meta.dirname, '../../..');

async function importWorker(spec: WorkerSpec): Promise<WorkerHandler> {
  const mod = (await import(resolve(REPO_ROOT, spec.entry))) as { handler?: WorkerHandler };
  if (typeof mod.handler !== 'function') throw new Error(`${spec.entry} exports no handler`);
  return mod.handler;
}

/** JSON round trip: what crosses a Lambda boundary. */
const viaJson = <T>(value: T): T => (value === undefined ? (null as T) : (JSON.parse(JSON.stringify(value)) as T));

function replaceDeep(value: unknown, from: string, to: string): unknown {
  if (value === from) return to;
  if (Array.isArray(value)) return value.map((v) => replaceDeep(v, from, to));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceDeep(v, from, to)]));
  return value;
}

/** An error as Step Functions sees a Lambda failure: its name is the error, its message the cause. */
function asTaskError(err: unknown): Error {
  if (err instanceof StoppedError) return err;
  const e = err instanceof Error ? err : new Error(String(err));
  const out = new Error(e.message);
  out.name = e.name && e.name !== 'Error' ? e.name : 'Error';
  return out;
}

const sentinelOf = (exec: Execution) => `${TOKEN_SENTINEL_PREFIX}${exec.name}`;

/**
 * The executions of the local Step Functions: each runs its machine in aws-local-stepfunctions
 * with the Task states answered by the worker modules (invoked as Lambda would: JSON in and
 * out, a Lambda context), `.waitForTaskToken` tasks waiting on a TaskTokens token, and the
 * machine's finalizer notified of an execution that did not succeed.
 */
export class Executions {
  private readonly byArn = new Map<string, Execution>();
  /** Worker calls under way: stopping lets them finish before the stores go away. */
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly handlers = new Map<string, Promise<WorkerHandler>>();
  private readonly loadWorker: (spec: WorkerSpec) => Promise<WorkerHandler>;
  private stopping = false;

  constructor(private readonly opts: ExecutionsOptions) {
    this.loadWorker = opts.loadWorker ?? importWorker;
  }

  get(arn: string): Execution | undefined {
    return this.byArn.get(arn);
  }

  arnOf(machine: LocalMachine, name: string): string {
    return executionArn(this.opts.placement, machine.spec, name);
  }

  running(): number {
    return [...this.byArn.values()].filter((e) => e.status === 'RUNNING').length;
  }

  start(machine: LocalMachine, name: string, input: string, startDate = new Date()): Execution {
    const exec: Execution = {
      arn: this.arnOf(machine, name),
      name,
      machine,
      input,
      status: 'RUNNING',
      startDate,
      controller: new AbortController(),
      historyEvents: 0,
    };
    this.byArn.set(exec.arn, exec);
    this.run(exec);
    this.persist();
    return exec;
  }

  /** StopExecution: ABORTED at once; resolves once the run has settled and its finalizer ran. */
  async stop(exec: Execution, reason: { error?: string; cause?: string }): Promise<void> {
    if (exec.status !== 'RUNNING') return;
    exec.status = 'ABORTED';
    exec.stopDate = new Date();
    if (reason.error !== undefined) exec.error = reason.error;
    if (reason.cause !== undefined) exec.cause = reason.cause;
    this.persist();
    exec.controller.abort();
    exec.abortRun?.();
    // The finalizer runs from the run's settlement (finish); wait for it like AWS's
    // asynchronous rule would have run by the time anyone looks.
    await exec.done;
  }

  /** The emulator stops: runs are halted (not ended: they resume after a restart), worker calls under way finish (bounded). */
  async shutdown(): Promise<void> {
    this.stopping = true;
    for (const exec of this.byArn.values()) {
      if (exec.status !== 'RUNNING') continue;
      exec.controller.abort();
      exec.abortRun?.();
    }
    this.opts.tokens.rejectAll(new StoppedError());
    await Promise.allSettled([...this.byArn.values()].map((e) => e.done));
    if (this.inflight.size) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...this.inflight]),
        new Promise<void>((r) => {
          timer = setTimeout(r, 10_000);
        }),
      ]);
      clearTimeout(timer);
    }
  }

  private persist(): void {
    if (!this.opts.file || this.stopping) return;
    this.opts.file.save(
      [...this.byArn.values()]
        .filter((e) => e.status === 'RUNNING')
        .map((e) => ({ machine: e.machine.spec.name, name: e.name, input: e.input, startDate: e.startDate.toISOString() })),
    );
  }

  private track<T>(work: Promise<T>): Promise<T> {
    this.inflight.add(work);
    work.then(
      () => this.inflight.delete(work),
      () => this.inflight.delete(work),
    );
    return work;
  }

  private handlerFor(spec: WorkerSpec): Promise<WorkerHandler> {
    let h = this.handlers.get(spec.name);
    if (!h) {
      h = this.loadWorker(spec);
      this.handlers.set(spec.name, h);
      h.catch(() => this.handlers.delete(spec.name));
    }
    return h;
  }

  private async invoke(worker: WorkerSpec, event: unknown): Promise<unknown> {
    const handler = await this.handlerFor(worker);
    const { placement } = this.opts;
    const context = lambdaContext({
      functionName: functionName(placement, worker.name),
      timeoutSeconds: worker.timeoutSeconds,
      memoryMb: 1024,
      region: placement.region,
      accountId: placement.accountId,
    });
    return viaJson(await handler(viaJson(event), context));
  }

  /** Run `work` unless/until the execution is stopped; a stop rejects at once. */
  private untilStopped<T>(exec: Execution, work: Promise<T>, track = true): Promise<T> {
    if (track) this.track(work);
    if (exec.controller.signal.aborted) return Promise.reject(new StoppedError());
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(new StoppedError());
      exec.controller.signal.addEventListener('abort', onAbort, { once: true });
      work.then(
        (v) => {
          exec.controller.signal.removeEventListener('abort', onAbort);
          resolve(v);
        },
        (e: unknown) => {
          exec.controller.signal.removeEventListener('abort', onAbort);
          reject(asTaskError(e));
        },
      );
    });
  }

  private taskOverride(exec: Execution, stateName: string) {
    const { worker, waitForToken } = exec.machine.tasks[stateName]!;
    return async (input: unknown): Promise<never> => {
      if (exec.controller.signal.aborted) throw new StoppedError();
      if (!waitForToken) return (await this.untilStopped(exec, this.invoke(worker, input))) as never;
      // `.waitForTaskToken`: a fresh token replaces the per-execution placeholder.
      const { token, answered } = this.opts.tokens.issue(exec.arn);
      const payload = replaceDeep((input as { Payload?: unknown }).Payload ?? {}, sentinelOf(exec), token);
      try {
        await this.untilStopped(exec, this.invoke(worker, payload));
        return (await this.untilStopped(exec, answered, false)) as never;
      } finally {
        this.opts.tokens.close(token, new StoppedError());
      }
    };
  }

  private run(exec: Execution): void {
    const m = exec.machine;
    const overrides = {
      taskResourceLocalHandlers: Object.fromEntries(Object.keys(m.tasks).map((s) => [s, this.taskOverride(exec, s)])),
      waitTimeOverrides: m.waitOverrides,
      retryIntervalOverrides: m.retryOverrides,
    };
    const context = {
      Execution: { Id: exec.arn, Name: exec.name, StartTime: exec.startDate.toISOString() },
      StateMachine: { Id: m.arn, Name: stateMachineName(this.opts.placement.stage, m.spec.name) },
      Task: { Token: sentinelOf(exec) },
    };
    const handle = m.runner.run(JSON.parse(exec.input), { overrides: overrides as never, context });
    exec.abortRun = handle.abort;
    void this.countHistory(exec, handle.eventLogs);
    exec.done = handle.result.then(
      (output) => this.finish(exec, 'SUCCEEDED', { output: JSON.stringify(output ?? null) }),
      (err: unknown) => {
        if (exec.historyExceeded) {
          const limit = this.opts.historyLimit ?? AWS_HISTORY_LIMIT;
          return this.finish(exec, 'FAILED', { error: 'States.Runtime', cause: `The execution's history reached ${limit} events, the Step Functions limit.` });
        }
        if (err instanceof ExecutionAbortedError) return this.finish(exec, 'ABORTED', {});
        if (err instanceof ExecutionTimeoutError) return this.finish(exec, 'TIMED_OUT', { error: 'States.Timeout', cause: 'The execution timed out.' });
        const cause = err instanceof ExecutionError ? (err.cause as Error | undefined) : (err as Error);
        return this.finish(exec, 'FAILED', { error: cause?.name ?? 'States.Runtime', cause: cause?.message ?? String(err) });
      },
    );
  }

  /**
   * Reads the run's events as they come (the library queues them until read, so an unread
   * log grows with every state) and fails the execution past the history limit, as AWS does.
   */
  private async countHistory(exec: Execution, events: AsyncGenerator<EventLog>): Promise<void> {
    const limit = this.opts.historyLimit ?? AWS_HISTORY_LIMIT;
    try {
      for await (const event of events) {
        exec.historyEvents += historyWeight(event);
        if (exec.historyEvents > limit && exec.status === 'RUNNING' && !exec.historyExceeded) {
          exec.historyExceeded = true;
          exec.controller.abort();
          exec.abortRun?.();
          return;
        }
      }
    } catch (err) {
      this.opts.report(`could not read the events of ${exec.arn}`, { error: (err as Error).message });
    }
  }

  private async finish(exec: Execution, status: Status, fields: { output?: string; error?: string; cause?: string }): Promise<void> {
    // Stopping the emulator is not an end of the execution: it resumes after a restart.
    if (this.stopping) return;
    if (exec.status === 'RUNNING') {
      Object.assign(exec, { status, stopDate: new Date() }, fields);
      exec.controller.abort();
      this.persist();
    }
    if (exec.status !== 'SUCCEEDED') await this.notifyFinalizer(exec);
  }

  /** The EventBridge "Step Functions Execution Status Change" event the CDK rule delivers. */
  private async notifyFinalizer(exec: Execution): Promise<void> {
    const name = exec.machine.spec.finalizer;
    if (!name) return;
    const worker = this.opts.workers.find((w) => w.name === name);
    if (!worker) return this.opts.report(`finalizer '${name}' is not a registered worker`);
    const { region, accountId } = this.opts.placement;
    const event = {
      version: '0',
      id: randomUUID(),
      'detail-type': 'Step Functions Execution Status Change',
      source: 'aws.states',
      account: accountId,
      time: new Date().toISOString(),
      region,
      resources: [exec.arn],
      detail: {
        executionArn: exec.arn,
        stateMachineArn: exec.machine.arn,
        name: exec.name,
        status: exec.status,
        startDate: exec.startDate.getTime(),
        stopDate: exec.stopDate?.getTime() ?? null,
        input: exec.input,
        output: exec.output ?? null,
        error: exec.error ?? null,
        cause: exec.cause ?? null,
      },
    };
    try {
      await this.track(this.invoke(worker, event));
    } catch (err) {
      this.opts.report(`finalizer ${name} failed for ${exec.arn}`, { error: (err as Error).message });
    }
  }
}
