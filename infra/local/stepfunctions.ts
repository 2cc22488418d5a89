import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ExecutionAbortedError, ExecutionError, ExecutionTimeoutError, StateMachine } from 'aws-local-stepfunctions';
import type { StateMachineDefinition as LibDefinition } from 'aws-local-stepfunctions';
import { LAMBDA_WAIT_FOR_TOKEN, substitute, validateDefinition, workerArnKey, type TaskState } from '../workflows/asl';
import { AwsJsonError, startAwsJsonServer } from './aws-json-server';
import { STATE_MACHINES, stateMachineName, WORKERS, type StateMachineSpec, type WorkerSpec } from '../workflows/registry';

/**
 * A local Step Functions (DESIGN.md §7, aws-stack-notes §4(d)): the AWS JSON 1.0 API the
 * production code calls through @aws-sdk/client-sfn (AWS_ENDPOINT_URL_SFN) — StartExecution,
 * DescribeExecution, StopExecution, SendTaskSuccess/Failure/Heartbeat — over
 * aws-local-stepfunctions, running the same ASL as CDK (infra/workflows). Task states invoke
 * the same worker modules as in Lambda, by name.
 *
 * Emulation notes:
 * - Execution names are idempotency keys as in AWS: a RUNNING execution started again with
 *   the same name and input is returned as is; any other reuse is ExecutionAlreadyExists.
 * - `.waitForTaskToken`: the worker is invoked with a fresh token in place of
 *   `$$.Task.Token`, and the task waits for SendTaskSuccess/Failure (or its TimeoutSeconds).
 *   HeartbeatSeconds is not enforced (the library does not support it).
 * - Wait states last at most `maxWaitMs` (default 2 s), and retry intervals too, so polling
 *   workflows move along locally; a shorter `Seconds` is kept.
 * - StopExecution aborts the run AND rejects the task in flight: the library leaves the
 *   task-timeout timer armed after abort() otherwise (the process would not exit).
 * - Executions end FAILED / TIMED_OUT / ABORTED notify the machine's finalizer worker with
 *   the EventBridge "Step Functions Execution Status Change" event, as the CDK rule does.
 * - With `dataDir`, running executions are saved and re-run from the start after a restart
 *   (workers are written to be re-entrant).
 */

export type WorkerHandler = (event: unknown, context: unknown) => Promise<unknown>;

export interface LocalStepFunctionsOptions {
  machines?: readonly StateMachineSpec[];
  workers?: readonly WorkerSpec[];
  /** Loads a worker's handler (default: import its entry module and take `handler`). */
  loadWorker?: (spec: WorkerSpec) => Promise<WorkerHandler>;
  /** Upper bound of every Wait state and retry interval, in ms (default 2000). */
  maxWaitMs?: number;
  /** Folder to keep running executions in across restarts, or null (in memory). */
  dataDir?: string | null;
  /** Physical-name stage (default `local`). */
  stage?: string;
  region?: string;
  accountId?: string;
  /** Where emulator problems are reported (default stderr). */
  report?: (message: string, detail?: unknown) => void;
}

export interface LocalStepFunctions {
  endpoint: string;
  /** State machine ARN by registry name. */
  arns: Readonly<Record<string, string>>;
  /** Env vars that point production code at this emulator (endpoint and machine ARNs). */
  env: Readonly<Record<string, string>>;
  /** Number of RUNNING executions (tests wait for quiescence with it). */
  running(): number;
  stop(): Promise<void>;
}

type Status = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'ABORTED';

interface LocalMachine {
  spec: StateMachineSpec;
  arn: string;
  runner: StateMachine;
  /** Task state name -> the worker it invokes and how. */
  tasks: Record<string, { worker: WorkerSpec; waitForToken: boolean }>;
  waitOverrides: Record<string, number>;
  retryOverrides: Record<string, number[]>;
}

interface Execution {
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
}

interface PendingToken {
  executionArn: string;
  resolve: (output: unknown) => void;
  reject: (err: Error) => void;
}

/** The library's marker properties: a stopped execution's errors are neither retried nor caught. */
class StoppedError extends Error {
  readonly isRetryable = false;
  readonly isCatchable = false;
  constructor() {
    super('The execution was stopped.');
    this.name = 'States.Runtime';
  }
}

/** setTimeout overflows above 2^31-1 ms (and would fire at once). */
const MAX_TIMER_SECONDS = Math.floor(2_147_483_647 / 1000);
const TOKEN_SENTINEL_PREFIX = 'local-task-token-placeholder:';
const NAME = /^[^\s<>{}[\]?*"#%\\^|~`$&,;:/\u0000-\u001f\u007f-\u009f]{1,80}$/;
const DEFAULT_REPORT = (message: string, detail?: unknown) =>
  process.stderr.write(`[local step functions] ${message}${detail === undefined ? '' : ` ${JSON.stringify(detail)}`}\n`);

const REPO_ROOT = resolve(import.meta.dirname, '../..');

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

function lambdaContext(functionName: string, timeoutSeconds: number, region: string, accountId: string) {
  const started = Date.now();
  return {
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:${accountId}:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    callbackWaitsForEmptyEventLoop: false,
    getRemainingTimeInMillis: () => Math.max(0, timeoutSeconds * 1000 - (Date.now() - started)),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

export async function startLocalStepFunctions(options: LocalStepFunctionsOptions = {}): Promise<LocalStepFunctions> {
  const region = options.region ?? 'us-east-1';
  const accountId = options.accountId ?? '000000000000';
  const stage = options.stage ?? 'local';
  const maxWaitMs = options.maxWaitMs ?? 2000;
  const report = options.report ?? DEFAULT_REPORT;
  const workers = options.workers ?? WORKERS;
  const loadWorker = options.loadWorker ?? importWorker;
  const persistFile = options.dataDir ? join(options.dataDir, 'executions.json') : null;
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });

  const handlers = new Map<string, Promise<WorkerHandler>>();
  const handlerFor = (spec: WorkerSpec) => {
    let h = handlers.get(spec.name);
    if (!h) {
      h = loadWorker(spec);
      handlers.set(spec.name, h);
      h.catch(() => handlers.delete(spec.name));
    }
    return h;
  };
  const functionName = (worker: string) => `ai-gateway-${stage}-${worker}`;
  const functionArn = (worker: string) => `arn:aws:lambda:${region}:${accountId}:function:${functionName(worker)}`;

  const executions = new Map<string, Execution>();
  const tokens = new Map<string, PendingToken>();
  const closedTokens = new Set<string>();
  const inflight = new Set<Promise<unknown>>();
  let stopping = false;

  // ---- machines --------------------------------------------------------------------------

  const machines = new Map<string, LocalMachine>();
  const arns: Record<string, string> = {};
  for (const spec of options.machines ?? STATE_MACHINES) {
    const raw = spec.definition();
    validateDefinition(raw);
    const definition = substitute(raw, Object.fromEntries(workers.map((w) => [workerArnKey(w.name), functionArn(w.name)])));
    // Longer than a Node timer can wait: the library would time the execution out at once.
    if (definition.TimeoutSeconds !== undefined && definition.TimeoutSeconds > MAX_TIMER_SECONDS) delete definition.TimeoutSeconds;
    const tasks: LocalMachine['tasks'] = {};
    const waitOverrides: Record<string, number> = {};
    const retryOverrides: Record<string, number[]> = {};
    for (const [name, state] of Object.entries(definition.States)) {
      if (state.Type === 'Wait') waitOverrides[name] = state.Seconds !== undefined ? Math.min(state.Seconds * 1000, maxWaitMs) : maxWaitMs;
      if (state.Type !== 'Task') continue;
      tasks[name] = taskWorker(name, state);
      if (state.Retry?.length) retryOverrides[name] = state.Retry.map((r) => Math.min((r.IntervalSeconds ?? 1) * 1000, maxWaitMs));
    }
    const arn = `arn:aws:states:${region}:${accountId}:stateMachine:${stateMachineName(stage, spec.name)}`;
    const runner = new StateMachine(definition as unknown as LibDefinition, { validationOptions: { checkArn: true, checkPaths: true } });
    machines.set(arn, { spec, arn, runner, tasks, waitOverrides, retryOverrides });
    arns[spec.name] = arn;
  }

  function taskWorker(stateName: string, state: TaskState): { worker: WorkerSpec; waitForToken: boolean } {
    const waitForToken = state.Resource === LAMBDA_WAIT_FOR_TOKEN;
    const ref = waitForToken ? String(state.Parameters?.FunctionName ?? '') : state.Resource;
    const worker = workers.find((w) => functionArn(w.name) === ref);
    if (!worker) throw new Error(`Task state ${stateName} invokes '${ref}', which is not a registered worker.`);
    return { worker, waitForToken };
  }

  // ---- task invocation -------------------------------------------------------------------

  /**
   * Run `work` unless/until the execution is stopped; a stop rejects at once. Worker calls
   * are tracked so that stop() can let them finish before the stores go away.
   */
  function untilStopped<T>(exec: Execution, work: Promise<T>, track = true): Promise<T> {
    if (track) {
      inflight.add(work);
      work.then(
        () => inflight.delete(work),
        () => inflight.delete(work),
      );
    }
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

  async function invoke(worker: WorkerSpec, event: unknown): Promise<unknown> {
    const handler = await handlerFor(worker);
    const out = await handler(viaJson(event), lambdaContext(functionName(worker.name), worker.timeoutSeconds, region, accountId));
    return viaJson(out);
  }

  function taskOverride(exec: Execution, stateName: string) {
    const { worker, waitForToken } = exec.machine.tasks[stateName]!;
    return async (input: unknown): Promise<never> => {
      if (exec.controller.signal.aborted) throw new StoppedError();
      if (!waitForToken) return (await untilStopped(exec, invoke(worker, input))) as never;
      // `.waitForTaskToken`: a fresh token replaces the per-execution placeholder.
      const token = `${randomBytes(24).toString('base64url')}`;
      const payload = replaceDeep((input as { Payload?: unknown }).Payload ?? {}, sentinelOf(exec), token);
      const answered = new Promise<unknown>((resolve, reject) => tokens.set(token, { executionArn: exec.arn, resolve, reject }));
      answered.catch(() => undefined);
      try {
        await untilStopped(exec, invoke(worker, payload));
        return (await untilStopped(exec, answered, false)) as never;
      } finally {
        tokens.get(token)?.reject(new StoppedError());
        tokens.delete(token);
        closedTokens.add(token);
      }
    };
  }

  const sentinelOf = (exec: Execution) => `${TOKEN_SENTINEL_PREFIX}${exec.name}`;

  // ---- executions ------------------------------------------------------------------------

  function persist(): void {
    if (!persistFile || stopping) return;
    const running = [...executions.values()]
      .filter((e) => e.status === 'RUNNING')
      .map((e) => ({ machine: e.machine.spec.name, name: e.name, input: e.input, startDate: e.startDate.toISOString() }));
    const tmp = `${persistFile}.tmp`;
    writeFileSync(tmp, JSON.stringify(running, null, 2));
    renameSync(tmp, persistFile);
  }

  function run(exec: Execution): void {
    const m = exec.machine;
    const overrides = {
      taskResourceLocalHandlers: Object.fromEntries(Object.keys(m.tasks).map((s) => [s, taskOverride(exec, s)])),
      waitTimeOverrides: m.waitOverrides,
      retryIntervalOverrides: m.retryOverrides,
    };
    const context = {
      Execution: { Id: exec.arn, Name: exec.name, StartTime: exec.startDate.toISOString() },
      StateMachine: { Id: m.arn, Name: stateMachineName(stage, m.spec.name) },
      Task: { Token: sentinelOf(exec) },
    };
    const handle = m.runner.run(JSON.parse(exec.input), { overrides: overrides as never, context });
    exec.abortRun = handle.abort;
    exec.done = handle.result.then(
      (output) => finish(exec, 'SUCCEEDED', { output: JSON.stringify(output ?? null) }),
      (err: unknown) => {
        if (err instanceof ExecutionAbortedError) return finish(exec, 'ABORTED', {});
        if (err instanceof ExecutionTimeoutError) return finish(exec, 'TIMED_OUT', { error: 'States.Timeout', cause: 'The execution timed out.' });
        const cause = err instanceof ExecutionError ? (err.cause as Error | undefined) : (err as Error);
        return finish(exec, 'FAILED', { error: cause?.name ?? 'States.Runtime', cause: cause?.message ?? String(err) });
      },
    );
  }

  async function finish(exec: Execution, status: Status, fields: { output?: string; error?: string; cause?: string }): Promise<void> {
    // Stopping the emulator is not an end of the execution: it resumes after a restart.
    if (stopping) return;
    if (exec.status === 'RUNNING') {
      Object.assign(exec, { status, stopDate: new Date() }, fields);
      exec.controller.abort();
      persist();
    }
    if (exec.status !== 'SUCCEEDED') await notifyFinalizer(exec);
  }

  async function notifyFinalizer(exec: Execution): Promise<void> {
    const name = exec.machine.spec.finalizer;
    if (!name) return;
    const worker = workers.find((w) => w.name === name);
    if (!worker) return report(`finalizer '${name}' is not a registered worker`);
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
    const work = invoke(worker, event);
    inflight.add(work);
    try {
      await work;
    } catch (err) {
      report(`finalizer ${name} failed for ${exec.arn}`, { error: (err as Error).message });
    } finally {
      inflight.delete(work);
    }
  }

  function start(machine: LocalMachine, name: string, input: string, startDate = new Date()): Execution {
    const arn = `arn:aws:states:${region}:${accountId}:execution:${stateMachineName(stage, machine.spec.name)}:${name}`;
    const exec: Execution = { arn, name, machine, input, status: 'RUNNING', startDate, controller: new AbortController() };
    executions.set(arn, exec);
    run(exec);
    persist();
    return exec;
  }

  // ---- API -------------------------------------------------------------------------------

  const epoch = (d: Date | undefined) => (d ? d.getTime() / 1000 : undefined);

  const api: Record<string, (input: Record<string, unknown>) => unknown> = {
    StartExecution(input) {
      const machine = machines.get(String(input.stateMachineArn ?? ''));
      if (!machine) throw new AwsJsonError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${String(input.stateMachineArn)}'`);
      const name = input.name === undefined ? randomUUID() : String(input.name);
      if (!NAME.test(name)) throw new AwsJsonError('InvalidName', `Invalid Name: '${name}'`);
      const text = input.input === undefined ? '{}' : String(input.input);
      try {
        JSON.parse(text);
      } catch {
        throw new AwsJsonError('InvalidExecutionInput', 'Invalid execution input: not JSON');
      }
      const arn = `arn:aws:states:${region}:${accountId}:execution:${stateMachineName(stage, machine.spec.name)}:${name}`;
      const existing = executions.get(arn);
      if (existing) {
        if (existing.status === 'RUNNING' && existing.input === text) return { executionArn: arn, startDate: epoch(existing.startDate) };
        throw new AwsJsonError('ExecutionAlreadyExists', `Execution Already Exists: '${arn}'`);
      }
      const exec = start(machine, name, text);
      return { executionArn: exec.arn, startDate: epoch(exec.startDate) };
    },
    DescribeExecution(input) {
      const exec = executions.get(String(input.executionArn ?? ''));
      if (!exec) throw new AwsJsonError('ExecutionDoesNotExist', `Execution Does Not Exist: '${String(input.executionArn)}'`);
      return {
        executionArn: exec.arn,
        stateMachineArn: exec.machine.arn,
        name: exec.name,
        status: exec.status,
        startDate: epoch(exec.startDate),
        stopDate: epoch(exec.stopDate),
        input: exec.input,
        output: exec.output,
        error: exec.error,
        cause: exec.cause,
      };
    },
    async StopExecution(input) {
      const exec = executions.get(String(input.executionArn ?? ''));
      if (!exec) throw new AwsJsonError('ExecutionDoesNotExist', `Execution Does Not Exist: '${String(input.executionArn)}'`);
      if (exec.status === 'RUNNING') {
        exec.status = 'ABORTED';
        exec.stopDate = new Date();
        if (input.error !== undefined) exec.error = String(input.error);
        if (input.cause !== undefined) exec.cause = String(input.cause);
        persist();
        exec.controller.abort();
        exec.abortRun?.();
        // The finalizer runs from the run's settlement (finish); wait for it like AWS's
        // asynchronous rule would have run by the time anyone looks.
        await exec.done;
      }
      return { stopDate: epoch(exec.stopDate) };
    },
    SendTaskSuccess(input) {
      const pending = pendingToken(input.taskToken);
      let output: unknown;
      try {
        output = JSON.parse(String(input.output ?? 'null'));
      } catch {
        throw new AwsJsonError('InvalidOutput', 'Invalid output: not JSON');
      }
      pending.resolve(output);
      return {};
    },
    SendTaskFailure(input) {
      const pending = pendingToken(input.taskToken);
      const err = new Error(input.cause === undefined ? '' : String(input.cause));
      err.name = input.error === undefined ? 'States.TaskFailed' : String(input.error);
      pending.reject(err);
      return {};
    },
    SendTaskHeartbeat(input) {
      pendingToken(input.taskToken);
      return {};
    },
  };

  function pendingToken(token: unknown): PendingToken {
    const t = String(token ?? '');
    const pending = tokens.get(t);
    if (pending) return pending;
    if (closedTokens.has(t)) throw new AwsJsonError('TaskTimedOut', 'Task Timed Out: the task of this token has already closed.');
    throw new AwsJsonError('TaskDoesNotExist', 'Task Does Not Exist: unknown task token.');
  }

  const server = await startAwsJsonServer({
    targetPrefix: 'AWSStepFunctions.',
    contentType: 'application/x-amz-json-1.0',
    operations: api,
    service: 'local Step Functions',
    onError: (err) => report('request failed', { error: err.message }),
  });
  const { endpoint } = server;

  // Executions that were running when the runtime last stopped start over.
  if (persistFile && existsSync(persistFile)) {
    try {
      const saved = JSON.parse(readFileSync(persistFile, 'utf8')) as Array<{ machine: string; name: string; input: string; startDate: string }>;
      for (const s of saved) {
        const machine = [...machines.values()].find((m) => m.spec.name === s.machine);
        if (machine) start(machine, s.name, s.input, new Date(s.startDate));
      }
    } catch (err) {
      report(`could not resume executions from ${persistFile}`, { error: (err as Error).message });
    }
  }

  const env: Record<string, string> = { AWS_ENDPOINT_URL_SFN: endpoint };
  for (const m of machines.values()) env[m.spec.envVar] = m.arn;

  return {
    endpoint,
    arns,
    env,
    running: () => [...executions.values()].filter((e) => e.status === 'RUNNING').length,
    async stop() {
      stopping = true;
      for (const exec of executions.values()) {
        if (exec.status !== 'RUNNING') continue;
        exec.controller.abort();
        exec.abortRun?.();
      }
      for (const pending of tokens.values()) pending.reject(new StoppedError());
      await Promise.allSettled([...executions.values()].map((e) => e.done));
      // Worker calls already under way finish (bounded), so nothing touches a stopped store later.
      if (inflight.size) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          Promise.allSettled([...inflight]),
          new Promise<void>((r) => {
            timer = setTimeout(r, 10_000);
          }),
        ]);
        clearTimeout(timer);
      }
      await server.stop();
    },
  };
}
