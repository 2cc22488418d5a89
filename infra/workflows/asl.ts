/**
 * A small typed builder for Amazon States Language (JSONPath flavour), used for every state
 * machine of the gateway. The definitions it produces are plain JSON with `${...}`
 * placeholders for the task workers' ARNs: CDK passes them to `DefinitionBody.fromString`
 * with `definitionSubstitutions` (infra/stacks/workflows-stack.ts), and the local runtime
 * substitutes fake ARNs and maps each task to the same worker module
 * (infra/local/stepfunctions/). Only what both sides support is offered: Lambda tasks
 * (plain or `.waitForTaskToken`), Wait, Choice, Pass, Succeed and Fail. Every task carries
 * an explicit `TimeoutSeconds` (aws-local-stepfunctions defaults to 60 s, AWS to a year).
 */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export interface Retrier {
  ErrorEquals: string[];
  IntervalSeconds?: number;
  MaxAttempts?: number;
  BackoffRate?: number;
  MaxDelaySeconds?: number;
  JitterStrategy?: 'NONE' | 'FULL';
}

export interface Catcher {
  ErrorEquals: string[];
  Next: string;
  ResultPath?: string | null;
}

interface Flow {
  Next?: string;
  End?: true;
  Comment?: string;
}

export interface TaskState extends Flow {
  Type: 'Task';
  Resource: string;
  Parameters?: JsonObject;
  ResultSelector?: JsonObject;
  ResultPath?: string | null;
  OutputPath?: string;
  TimeoutSeconds: number;
  Retry?: Retrier[];
  Catch?: Catcher[];
}

export interface WaitState extends Flow {
  Type: 'Wait';
  Seconds?: number;
  SecondsPath?: string;
}

export interface PassState extends Flow {
  Type: 'Pass';
  Parameters?: JsonObject;
  Result?: JsonValue;
  ResultPath?: string | null;
}

export type ChoiceRule = { Variable: string; Next?: string } & Record<string, JsonValue | undefined>;

export interface ChoiceState {
  Type: 'Choice';
  Choices: Array<ChoiceRule & { Next: string }>;
  Default?: string;
  Comment?: string;
}

export interface SucceedState {
  Type: 'Succeed';
  Comment?: string;
}

export interface FailState {
  Type: 'Fail';
  Error?: string;
  Cause?: string;
  Comment?: string;
}

export type State = TaskState | WaitState | PassState | ChoiceState | SucceedState | FailState;

export interface StateMachineDefinition {
  Comment?: string;
  StartAt: string;
  /** Whole-execution limit; the local runner honours it too. */
  TimeoutSeconds?: number;
  States: Record<string, State>;
}

/** The substitution key CDK and the local runner fill with a task worker's ARN. */
export const workerArnKey = (worker: string): string =>
  'WorkerArn' +
  worker
    .split(/[^a-zA-Z0-9]+/)
    .filter(Boolean)
    .map((p) => p[0]!.toUpperCase() + p.slice(1))
    .join('');

export const workerArnPlaceholder = (worker: string): string => `\${${workerArnKey(worker)}}`;

/** Service-integration resource for a Lambda task that waits for SendTaskSuccess/Failure. */
export const LAMBDA_WAIT_FOR_TOKEN = 'arn:aws:states:::lambda:invoke.waitForTaskToken';

/**
 * Transient Lambda service errors that Step Functions recommends retrying (the same list CDK
 * adds to LambdaInvoke tasks). Locally they never occur, so the retrier is inert there.
 */
export const LAMBDA_SERVICE_RETRY: Retrier = {
  ErrorEquals: [
    'Lambda.ClientExecutionTimeoutException',
    'Lambda.ServiceException',
    'Lambda.AWSLambdaException',
    'Lambda.SdkClientException',
    'Lambda.TooManyRequestsException',
  ],
  IntervalSeconds: 2,
  MaxAttempts: 6,
  BackoffRate: 2,
  JitterStrategy: 'FULL',
};

export interface LambdaTaskOptions {
  /** Worker name (infra/workflows/registry.ts). */
  worker: string;
  /** The worker's event. Keys ending in `.$` are JSONPaths, as in ASL. */
  parameters: JsonObject;
  timeoutSeconds: number;
  resultPath?: string | null;
  next?: string;
  end?: true;
  retry?: Retrier[];
  catch?: Catcher[];
  comment?: string;
}

function flow(o: { next?: string; end?: true; comment?: string }): Flow {
  if (Boolean(o.next) === Boolean(o.end)) throw new Error('A state needs exactly one of `next` and `end`.');
  return { ...(o.next ? { Next: o.next } : { End: true as const }), ...(o.comment ? { Comment: o.comment } : {}) };
}

/**
 * A task that invokes a worker Lambda directly (Resource = its ARN): the worker receives
 * `parameters` (paths resolved) as its event and its return value is the task's result.
 */
export function lambdaTask(o: LambdaTaskOptions): TaskState {
  if (!Number.isInteger(o.timeoutSeconds) || o.timeoutSeconds < 1) throw new Error(`Task timeout must be a positive integer (worker ${o.worker}).`);
  return {
    Type: 'Task',
    Resource: workerArnPlaceholder(o.worker),
    Parameters: o.parameters,
    TimeoutSeconds: o.timeoutSeconds,
    ...(o.resultPath !== undefined ? { ResultPath: o.resultPath } : {}),
    Retry: [LAMBDA_SERVICE_RETRY, ...(o.retry ?? [])],
    ...(o.catch?.length ? { Catch: o.catch } : {}),
    ...flow(o),
  };
}

/**
 * A task that invokes a worker with a task token (`$$.Task.Token` under `tokenField`) and
 * then waits until someone calls SendTaskSuccess/SendTaskFailure with that token, or the
 * timeout (catch `States.Timeout`) elapses. The task's result is the SendTaskSuccess output.
 */
export function lambdaWaitForTokenTask(o: LambdaTaskOptions & { tokenField?: string }): TaskState {
  if (!Number.isInteger(o.timeoutSeconds) || o.timeoutSeconds < 1) throw new Error(`Task timeout must be a positive integer (worker ${o.worker}).`);
  return {
    Type: 'Task',
    Resource: LAMBDA_WAIT_FOR_TOKEN,
    Parameters: {
      FunctionName: workerArnPlaceholder(o.worker),
      Payload: { ...o.parameters, [`${o.tokenField ?? 'taskToken'}.$`]: '$$.Task.Token' },
    },
    TimeoutSeconds: o.timeoutSeconds,
    ...(o.resultPath !== undefined ? { ResultPath: o.resultPath } : {}),
    Retry: [LAMBDA_SERVICE_RETRY, ...(o.retry ?? [])],
    ...(o.catch?.length ? { Catch: o.catch } : {}),
    ...flow(o),
  };
}

export function waitSeconds(o: { seconds?: number; secondsPath?: string; next?: string; end?: true; comment?: string }): WaitState {
  if ((o.seconds === undefined) === (o.secondsPath === undefined)) throw new Error('A Wait state needs exactly one of `seconds` and `secondsPath`.');
  return { Type: 'Wait', ...(o.seconds !== undefined ? { Seconds: o.seconds } : { SecondsPath: o.secondsPath! }), ...flow(o) };
}

/** A Choice on one string field: `{value: next}`; anything else goes to `otherwise`. */
export function choiceOn(variable: string, cases: Record<string, string>, otherwise: string, comment?: string): ChoiceState {
  return {
    Type: 'Choice',
    Choices: Object.entries(cases).map(([value, next]) => ({ Variable: variable, StringEquals: value, Next: next })),
    Default: otherwise,
    ...(comment ? { Comment: comment } : {}),
  };
}

export const succeed = (comment?: string): SucceedState => ({ Type: 'Succeed', ...(comment ? { Comment: comment } : {}) });
export const fail = (error: string, cause: string): FailState => ({ Type: 'Fail', Error: error, Cause: cause });

/** Which of `workers` a definition invokes (plain and token tasks). */
export function workersOf(definition: StateMachineDefinition, workers: readonly string[]): string[] {
  const refs = new Set<string>();
  for (const state of Object.values(definition.States)) {
    if (state.Type !== 'Task') continue;
    refs.add(state.Resource === LAMBDA_WAIT_FOR_TOKEN ? String(state.Parameters?.FunctionName ?? '') : state.Resource);
  }
  return workers.filter((w) => refs.has(workerArnPlaceholder(w)));
}

/**
 * Structural checks that catch mistakes before CDK or the emulator do: every `Next`,
 * `Default` and catcher target exists, StartAt exists, every task has a timeout, every
 * state is reachable.
 */
export function validateDefinition(def: StateMachineDefinition): void {
  const names = new Set(Object.keys(def.States));
  const problems: string[] = [];
  const targets = (s: State): string[] => {
    const out: string[] = [];
    if ('Next' in s && s.Next) out.push(s.Next);
    if (s.Type === 'Choice') {
      out.push(...s.Choices.map((c) => c.Next));
      if (s.Default) out.push(s.Default);
    }
    if (s.Type === 'Task') out.push(...(s.Catch ?? []).map((c) => c.Next));
    return out;
  };
  if (!names.has(def.StartAt)) problems.push(`StartAt '${def.StartAt}' is not a state`);
  for (const [name, state] of Object.entries(def.States)) {
    for (const t of targets(state)) if (!names.has(t)) problems.push(`${name} -> '${t}' is not a state`);
    if (state.Type === 'Task' && !(state.TimeoutSeconds >= 1)) problems.push(`${name} has no TimeoutSeconds`);
  }
  const seen = new Set<string>();
  const visit = (n: string) => {
    if (seen.has(n) || !def.States[n]) return;
    seen.add(n);
    targets(def.States[n]).forEach(visit);
  };
  visit(def.StartAt);
  for (const n of names) if (!seen.has(n)) problems.push(`${n} is unreachable`);
  if (problems.length) throw new Error(`Invalid state machine definition: ${problems.join('; ')}`);
}

/** Replace `${key}` placeholders (what CloudFormation's DefinitionSubstitutions does). */
export function substitute(definition: StateMachineDefinition, values: Record<string, string>): StateMachineDefinition {
  const text = JSON.stringify(definition).replace(/\$\{([A-Za-z0-9_]+)\}/g, (whole, key: string) => values[key] ?? whole);
  return JSON.parse(text) as StateMachineDefinition;
}
