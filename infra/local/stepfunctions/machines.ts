import type { StateMachine, StateMachineDefinition as LibDefinition } from 'aws-local-stepfunctions';
import { LAMBDA_WAIT_FOR_TOKEN, substitute, validateDefinition, workerArnKey, type TaskState } from '../../workflows/asl';
import { stateMachineName, type StateMachineSpec, type WorkerSpec } from '../../workflows/registry';
import { runnerFor } from './accepted-definitions';

/** Where the emulated resources live: their ARNs and physical names. */
export interface LocalPlacement {
  region: string;
  accountId: string;
  /** Physical-name stage (`ai-gateway-<stage>-...`). */
  stage: string;
}

export const functionName = (p: LocalPlacement, worker: string) => `ai-gateway-${p.stage}-${worker}`;
export const functionArn = (p: LocalPlacement, worker: string) => `arn:aws:lambda:${p.region}:${p.accountId}:function:${functionName(p, worker)}`;
export const machineArn = (p: LocalPlacement, spec: StateMachineSpec) =>
  `arn:aws:states:${p.region}:${p.accountId}:stateMachine:${stateMachineName(p.stage, spec.name)}`;
export const executionArn = (p: LocalPlacement, spec: StateMachineSpec, name: string) =>
  `arn:aws:states:${p.region}:${p.accountId}:execution:${stateMachineName(p.stage, spec.name)}:${name}`;

/** A registry machine ready to run: the library's runner and what the overrides need. */
export interface LocalMachine {
  spec: StateMachineSpec;
  arn: string;
  runner: StateMachine;
  /** Task state name -> the worker it invokes and how. */
  tasks: Record<string, { worker: WorkerSpec; waitForToken: boolean }>;
  waitOverrides: Record<string, number>;
  retryOverrides: Record<string, number[]>;
}

/** setTimeout overflows above 2^31-1 ms (and would fire at once). */
const MAX_TIMER_SECONDS = Math.floor(2_147_483_647 / 1000);

/**
 * The machine's ASL as CDK deploys it (worker ARNs substituted), with Wait states and
 * retry intervals capped at `maxWaitMs` so polling workflows move along locally.
 */
export function compileMachine(spec: StateMachineSpec, workers: readonly WorkerSpec[], placement: LocalPlacement, maxWaitMs: number): LocalMachine {
  const raw = spec.definition();
  validateDefinition(raw);
  const definition = substitute(raw, Object.fromEntries(workers.map((w) => [workerArnKey(w.name), functionArn(placement, w.name)])));
  // Longer than a Node timer can wait: the library would time the execution out at once.
  if (definition.TimeoutSeconds !== undefined && definition.TimeoutSeconds > MAX_TIMER_SECONDS) delete definition.TimeoutSeconds;
  const tasks: LocalMachine['tasks'] = {};
  const waitOverrides: Record<string, number> = {};
  const retryOverrides: Record<string, number[]> = {};
  for (const [name, state] of Object.entries(definition.States)) {
    if (state.Type === 'Wait') waitOverrides[name] = state.Seconds !== undefined ? Math.min(state.Seconds * 1000, maxWaitMs) : maxWaitMs;
    if (state.Type !== 'Task') continue;
    tasks[name] = taskWorker(name, state, workers, placement);
    if (state.Retry?.length) retryOverrides[name] = state.Retry.map((r) => Math.min((r.IntervalSeconds ?? 1) * 1000, maxWaitMs));
  }
  const runner = runnerFor(definition as unknown as LibDefinition);
  return { spec, arn: machineArn(placement, spec), runner, tasks, waitOverrides, retryOverrides };
}

function taskWorker(stateName: string, state: TaskState, workers: readonly WorkerSpec[], placement: LocalPlacement) {
  const waitForToken = state.Resource === LAMBDA_WAIT_FOR_TOKEN;
  const ref = waitForToken ? String(state.Parameters?.FunctionName ?? '') : state.Resource;
  const worker = workers.find((w) => functionArn(placement, w.name) === ref);
  if (!worker) throw new Error(`Task state ${stateName} invokes '${ref}', which is not a registered worker.`);
  return { worker, waitForToken };
}
