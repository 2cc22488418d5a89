import { startAwsJsonServer } from '../aws-json-server';
import { STATE_MACHINES, WORKERS, type StateMachineSpec, type WorkerSpec } from '../../workflows/registry';
import { stepFunctionsApi } from './api';
import { Executions, type WorkerHandler } from './executions';
import { compileMachine, type LocalMachine, type LocalPlacement } from './machines';
import { executionFile } from './persistence';
import { TaskTokens } from './task-tokens';

/**
 * A local Step Functions): the AWS JSON 1.0 API the
 * production code calls through @aws-sdk/client-sfn (AWS_ENDPOINT_URL_SFN) — StartExecution,
 * DescribeExecution, StopExecution, SendTaskSuccess/Failure/Heartbeat (api.ts) — over
 * aws-local-stepfunctions, running the same ASL as CDK (infra/workflows; machines.ts). Task
 * states invoke the same worker modules as in Lambda, by name (executions.ts).
 *
 * Emulation notes:
 * - Execution names are idempotency keys as in AWS: a RUNNING execution started again with
 *   the same name and input is returned as is; any other reuse is ExecutionAlreadyExists.
 * - `.waitForTaskToken`: the worker is invoked with a fresh token in place of
 *   `$$.Task.Token`, and the task waits for SendTaskSuccess/Failure (or its TimeoutSeconds)
 *   (task-tokens.ts). HeartbeatSeconds is not enforced (the library does not support it).
 * - Wait states last at most `maxWaitMs` (default 2 s), and retry intervals too, so polling
 *   workflows move along locally; a shorter `Seconds` is kept.
 * - StopExecution aborts the run AND rejects the task in flight: the library leaves the
 *   task-timeout timer armed after abort() otherwise (the process would not exit).
 * - Executions end FAILED / TIMED_OUT / ABORTED notify the machine's finalizer worker with
 *   the EventBridge "Step Functions Execution Status Change" event, as the CDK rule does.
 * - An execution fails (States.Runtime) when its history passes 25,000 events, counted as AWS
 *   counts them (executions.ts), so workflows that loop must continue in a new execution.
 * - With `dataDir`, running executions are saved and re-run from the start after a restart
 *   (workers are written to be re-entrant; persistence.ts).
 */

export type { WorkerHandler } from './executions';

export interface LocalStepFunctionsOptions {
  machines?: readonly StateMachineSpec[];
  workers?: readonly WorkerSpec[];
  /** Loads a worker's handler (default: import its entry module and take `handler`). */
  loadWorker?: (spec: WorkerSpec) => Promise<WorkerHandler>;
  /** Upper bound of every Wait state and retry interval, in ms (default 2000). */
  maxWaitMs?: number;
  /** Folder to keep running executions in across restarts, or null (in memory). */
  dataDir?: string | null;
  /** History events an execution may have before it fails (default 25,000, AWS's limit). */
  historyLimit?: number;
  /**
   * Do not re-run the saved executions yet; `resumeSaved()` does it later. The local runtime
   * waits until the workers' settings (this emulator's endpoint, the machine ARNs, the queue
   * URLs) are in process.env: a worker started before would read its settings without them.
   */
  deferResume?: boolean;
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
  /** Re-run the executions saved by the last run (when started with `deferResume`). Idempotent. */
  resumeSaved(): void;
  stop(): Promise<void>;
}

const DEFAULT_REPORT = (message: string, detail?: unknown) =>
  process.stderr.write(`[local step functions] ${message}${detail === undefined ? '' : ` ${JSON.stringify(detail)}`}\n`);

export async function startLocalStepFunctions(options: LocalStepFunctionsOptions = {}): Promise<LocalStepFunctions> {
  const placement: LocalPlacement = { region: options.region ?? 'us-east-1', accountId: options.accountId ?? '000000000000', stage: options.stage ?? 'local' };
  const report = options.report ?? DEFAULT_REPORT;
  const workers = options.workers ?? WORKERS;
  const maxWaitMs = options.maxWaitMs ?? 2000;
  const file = options.dataDir ? executionFile(options.dataDir) : null;

  const machines = new Map<string, LocalMachine>();
  for (const spec of options.machines ?? STATE_MACHINES) {
    const machine = compileMachine(spec, workers, placement, maxWaitMs);
    machines.set(machine.arn, machine);
  }
  const tokens = new TaskTokens();
  const executions = new Executions({
    placement,
    workers,
    ...(options.loadWorker ? { loadWorker: options.loadWorker } : {}),
    ...(options.historyLimit ? { historyLimit: options.historyLimit } : {}),
    tokens,
    file,
    report,
  });

  const server = await startAwsJsonServer({
    targetPrefix: 'AWSStepFunctions.',
    contentType: 'application/x-amz-json-1.0',
    operations: stepFunctionsApi(machines, executions, tokens),
    service: 'local Step Functions',
    onError: (err) => report('request failed', { error: err.message }),
  });

  // Executions that were running when the runtime last stopped start over.
  let resumed = false;
  const resumeSaved = () => {
    if (resumed || !file) return;
    resumed = true;
    try {
      for (const saved of file.load()) {
        const machine = [...machines.values()].find((m) => m.spec.name === saved.machine);
        if (machine) executions.start(machine, saved.name, saved.input, new Date(saved.startDate));
      }
    } catch (err) {
      report(`could not resume executions from ${file.path}`, { error: (err as Error).message });
    }
  };
  if (!options.deferResume) resumeSaved();

  const arns: Record<string, string> = {};
  const env: Record<string, string> = { AWS_ENDPOINT_URL_SFN: server.endpoint };
  for (const m of machines.values()) {
    arns[m.spec.name] = m.arn;
    env[m.spec.envVar] = m.arn;
  }

  return {
    endpoint: server.endpoint,
    arns,
    env,
    running: () => executions.running(),
    resumeSaved,
    async stop() {
      await executions.shutdown();
      await server.stop();
    },
  };
}
