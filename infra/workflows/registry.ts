/**
 * Every asynchronous piece of the gateway in one place: state machines, the
 * Lambda workers they invoke, the queues that feed them, and who may start, stop or answer
 * them. The CDK workflows stack (infra/stacks/workflows-stack.ts) and the local runtime
 * (infra/local/stepfunctions/, infra/local/sqs.ts) both build from these lists, so a
 * workflow added here runs the same way in AWS and on one machine.
 *
 * Adding a workflow (e.g. assistant runs):
 *   1. write its definition with ./asl.ts in infra/workflows/<name>.ts;
 *   2. add its workers (functions/workers/<worker>.ts, each exporting `handler`) to WORKERS
 *      and their table/KMS grants to WORKER_ACCESS in infra/stacks/access.ts;
 *   3. add a StateMachineSpec to STATE_MACHINES and, if it is fed by a queue, a QueueSpec to
 *      QUEUES; name the env vars of functions/shared/config.ts that carry the ARN / URL.
 * Rule (infra/workflows/README.md): a worker invoked by a state machine never appears among that
 * machine's starters, stoppers or task responders (that is a dependency cycle in CDK).
 */
import { workersOf, type StateMachineDefinition } from './asl';
import { FINE_TUNE_FINALIZE_WORKER, FINE_TUNE_START_WORKER, FINE_TUNE_STEP_WORKER, fineTuningDefinition } from './fine-tuning';
import { RUN_FINALIZE_WORKER, RUN_RECONCILE_WORKER, RUN_START_WORKER, RUN_STEP_WORKER, MODEL_STEP_TIMEOUT_SECONDS, runsDefinition } from './runs';

/** The batch queue's consumer (functions/workers/batch-run.ts). */
export const BATCH_RUN_WORKER = 'batch-run';

/** An endpoint-group Lambda (`api:<group>`, infra/endpoint-groups.ts) or a worker (`worker:<name>`). */
export type Principal = `api:${string}` | `worker:${string}`;

export type WorkerKind =
  /** Invoked by a state machine's Task states (event = the task's Parameters). */
  | 'task'
  /** Lambda SQS event source mapping (SQSEvent in, `{batchItemFailures}` out). */
  | 'queue-consumer'
  /** EventBridge "Step Functions Execution Status Change" for FAILED, TIMED_OUT, ABORTED. */
  | 'execution-finalizer'
  /** Invoked on a schedule (an EventBridge rule, `scheduleMinutes`); locally on a timer. */
  | 'scheduled';

export interface WorkerSpec {
  name: string;
  /** Module exporting `handler`, relative to the repository root. */
  entry: string;
  kind: WorkerKind;
  description: string;
  timeoutSeconds: number;
  /** `scheduled` workers: minutes between invocations in AWS. */
  scheduleMinutes?: number;
}

export interface StateMachineSpec {
  /** Short name: the physical name is `ai-gateway-<stage>-<name>`. */
  name: string;
  /** Env var (functions/shared/config.ts) through which functions learn the ARN. */
  envVar: string;
  description: string;
  definition(): StateMachineDefinition;
  /** Receives execution status changes FAILED / TIMED_OUT / ABORTED (hard stops, crashes). */
  finalizer?: string;
  /** May StartExecution (an existing name counts as started: functions/shared/workflows/sfn.ts). */
  starters: readonly Principal[];
  /** May StopExecution (hard stop) and DescribeExecution. */
  stoppers: readonly Principal[];
  /** May SendTaskSuccess / SendTaskFailure / SendTaskHeartbeat. */
  taskResponders: readonly Principal[];
  /** May DescribeExecution only (e.g. a reconciler that checks whether an execution still runs). */
  observers?: readonly Principal[];
}

export interface QueueSpec {
  /** Short name: the physical name is `ai-gateway-<stage>-<name>` (+ `.fifo`). */
  name: string;
  fifo: boolean;
  /** Env var (functions/shared/config.ts) through which producers learn the queue URL. */
  envVar: string;
  /** Worker of kind `queue-consumer`. */
  consumer: string;
  batchSize: number;
  /** Receives before a message moves to the queue's dead-letter queue. */
  maxReceiveCount: number;
  /** Should be at least 6x the consumer timeout (AWS guidance for event source mappings). */
  visibilityTimeoutSeconds: number;
  /** May SendMessage. */
  producers: readonly Principal[];
}

export const WORKERS: readonly WorkerSpec[] = [
  {
    name: FINE_TUNE_STEP_WORKER,
    entry: 'functions/workers/fine-tune-step.ts',
    kind: 'task',
    description: 'fine-tuning job steps: validate files, submit, poll the provider, mark failed',
    timeoutSeconds: 170,
  },
  {
    name: FINE_TUNE_START_WORKER,
    entry: 'functions/workers/fine-tune-start.ts',
    kind: 'queue-consumer',
    description: 'starts one fine-tuning execution per queued job (execution name = job id)',
    timeoutSeconds: 30,
  },
  {
    name: FINE_TUNE_FINALIZE_WORKER,
    entry: 'functions/workers/fine-tune-finalize.ts',
    kind: 'execution-finalizer',
    description: 'marks a job failed when its execution failed, timed out or was stopped without a terminal state',
    timeoutSeconds: 30,
  },
  {
    name: RUN_STEP_WORKER,
    entry: 'functions/workers/run-step.ts',
    kind: 'task',
    description: 'assistant run steps: start, one model call, store the tool-output task token, expire, fail',
    // One model call through the gateway (upstream timeout 600 s) and its writes.
    timeoutSeconds: MODEL_STEP_TIMEOUT_SECONDS,
  },
  {
    name: RUN_START_WORKER,
    entry: 'functions/workers/run-start.ts',
    kind: 'queue-consumer',
    description: 'starts one run execution per queued run (execution name = run id)',
    timeoutSeconds: 30,
  },
  {
    name: RUN_FINALIZE_WORKER,
    entry: 'functions/workers/run-finalize.ts',
    kind: 'execution-finalizer',
    description: 'cancels a cancelling run whose execution was stopped; fails an active run whose execution ended',
    timeoutSeconds: 60,
  },
  {
    name: BATCH_RUN_WORKER,
    entry: 'functions/workers/batch-run.ts',
    kind: 'queue-consumer',
    description: 'batches: validates an input file, answers a chunk of lines through the pipeline (each once), writes the output and error files',
    // A chunk's lines may wait on rate limits; a chunk cut off by the timeout comes back and answers only what is left.
    timeoutSeconds: 900,
  },
  {
    name: RUN_RECONCILE_WORKER,
    entry: 'functions/workers/run-reconcile.ts',
    kind: 'scheduled',
    description: 'ends active runs that no executor holds any more (execution not running, streamed run whose lease lapsed, past expires_at)',
    timeoutSeconds: 120,
    scheduleMinutes: 1,
  },
];

export const STATE_MACHINES: readonly StateMachineSpec[] = [
  {
    name: 'fine-tuning',
    envVar: 'FINE_TUNING_STATE_MACHINE_ARN',
    description: 'fine-tuning jobs: validating_files -> provider job -> polls -> succeeded | failed | cancelled',
    definition: fineTuningDefinition,
    finalizer: FINE_TUNE_FINALIZE_WORKER,
    starters: [`worker:${FINE_TUNE_START_WORKER}`],
    // The cancel API stops an execution that has not reached the provider yet (hard stop).
    stoppers: ['api:fine-tuning'],
    taskResponders: [],
  },
  {
    name: 'runs',
    envVar: 'RUN_STATE_MACHINE_ARN',
    description: 'assistant runs: in_progress -> model steps <-> tool-output waits -> completed | incomplete | failed | expired | cancelled',
    definition: runsDefinition,
    finalizer: RUN_FINALIZE_WORKER,
    starters: [`worker:${RUN_START_WORKER}`],
    // Cancel is a hard stop; submit_tool_outputs answers the WaitForToolOutputs task token.
    stoppers: ['api:assistants'],
    taskResponders: ['api:assistants'],
    // The reconciler asks whether a run's execution still runs.
    observers: [`worker:${RUN_RECONCILE_WORKER}`],
  },
];

export const QUEUES: readonly QueueSpec[] = [
  {
    // Batch work: validate, chunks of lines, finalize. Group = workspace: a workspace's chunks
    // run one at a time (bounded concurrency per workspace and per batch); a chunk is its
    // own deduplication id. A chunk that keeps waiting on rate limits comes back many times.
    name: 'batches',
    fifo: true,
    envVar: 'BATCH_QUEUE_URL',
    consumer: BATCH_RUN_WORKER,
    batchSize: 1,
    maxReceiveCount: 50,
    visibilityTimeoutSeconds: 5400,
    producers: ['api:batches', `worker:${BATCH_RUN_WORKER}`],
  },
  {
    // Native batch steps (functions/batches/native/lifecycle.ts): submit the batch to the
    // provider's batch API, then poll its job with delayed messages (DelaySeconds needs a
    // standard queue) until it ends, then collect its results. Every step is idempotent, so a
    // duplicate delivery only polls once more.
    name: 'batches-native',
    fifo: false,
    envVar: 'BATCH_NATIVE_QUEUE_URL',
    consumer: BATCH_RUN_WORKER,
    batchSize: 1,
    maxReceiveCount: 50,
    visibilityTimeoutSeconds: 5400,
    producers: ['api:batches', `worker:${BATCH_RUN_WORKER}`],
  },
  {
    name: 'fine-tuning-jobs',
    fifo: false,
    envVar: 'FINE_TUNING_QUEUE_URL',
    consumer: FINE_TUNE_START_WORKER,
    batchSize: 5,
    maxReceiveCount: 5,
    visibilityTimeoutSeconds: 180,
    // The API queues new jobs; the step worker queues a job's next execution (history limit).
    producers: ['api:fine-tuning', `worker:${FINE_TUNE_STEP_WORKER}`],
  },
  {
    // One message per new run; group = thread id (a thread's commands in order), dedup id = run id.
    name: 'runs',
    fifo: true,
    envVar: 'RUN_QUEUE_URL',
    consumer: RUN_START_WORKER,
    batchSize: 1,
    maxReceiveCount: 5,
    visibilityTimeoutSeconds: 180,
    producers: ['api:assistants'],
  },
];

export const workerSpec = (name: string): WorkerSpec => {
  const spec = WORKERS.find((w) => w.name === name);
  if (!spec) throw new Error(`infra/workflows/registry.ts has no worker '${name}'.`);
  return spec;
};

/** Task workers a machine's definition invokes. */
export const taskWorkersOf = (machine: StateMachineSpec): string[] =>
  workersOf(
    machine.definition(),
    WORKERS.filter((w) => w.kind === 'task').map((w) => w.name),
  );

/** Physical names, shared by CDK and the local runtime. */
export const stateMachineName = (stage: string, machine: string) => `ai-gateway-${stage}-${machine}`;
export const queueName = (stage: string, q: QueueSpec) => `ai-gateway-${stage}-${q.name}${q.fifo ? '.fifo' : ''}`;
export const deadLetterQueueName = (stage: string, q: QueueSpec) => `ai-gateway-${stage}-${q.name}-dlq${q.fifo ? '.fifo' : ''}`;

/** Principals that act on a machine (for the cycle rule and for grants). */
export function actorsOf(machine: StateMachineSpec): Principal[] {
  return [...new Set([...machine.starters, ...machine.stoppers, ...machine.taskResponders, ...(machine.observers ?? [])])];
}

/** Throws when the registry breaks its own rules (checked by the tests and at synth). */
export function validateRegistry(): void {
  const problems: string[] = [];
  const names = new Set(WORKERS.map((w) => w.name));
  if (names.size !== WORKERS.length) problems.push('duplicate worker names');
  const workerPrincipal = (p: Principal) => (p.startsWith('worker:') ? p.slice('worker:'.length) : undefined);
  for (const m of STATE_MACHINES) {
    const tasks = taskWorkersOf(m);
    if (tasks.length === 0) problems.push(`${m.name}: its definition invokes no registered task worker`);
    for (const p of actorsOf(m)) {
      const w = workerPrincipal(p);
      if (w && !names.has(w)) problems.push(`${m.name}: unknown worker ${p}`);
      if (w && tasks.includes(w)) problems.push(`${m.name}: task worker ${w} must not start, stop or answer its own machine (CDK dependency cycle)`);
    }
    if (m.finalizer && workerSpec(m.finalizer).kind !== 'execution-finalizer')
      problems.push(`${m.name}: finalizer ${m.finalizer} is not an execution-finalizer`);
  }
  for (const w of WORKERS) {
    if ((w.kind === 'scheduled') !== (w.scheduleMinutes !== undefined)) problems.push(`${w.name}: scheduleMinutes is for (and required by) scheduled workers`);
    if (w.scheduleMinutes !== undefined && (!Number.isInteger(w.scheduleMinutes) || w.scheduleMinutes < 1))
      problems.push(`${w.name}: scheduleMinutes must be a whole number >= 1`);
  }
  for (const q of QUEUES) {
    if (!names.has(q.consumer) || workerSpec(q.consumer).kind !== 'queue-consumer')
      problems.push(`${q.name}: consumer ${q.consumer} is not a queue-consumer worker`);
    const consumerTimeout = names.has(q.consumer) ? workerSpec(q.consumer).timeoutSeconds : 0;
    if (q.visibilityTimeoutSeconds < consumerTimeout) problems.push(`${q.name}: visibility timeout below the consumer timeout`);
  }
  if (problems.length) throw new Error(`infra/workflows/registry.ts: ${problems.join('; ')}`);
}
