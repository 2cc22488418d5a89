import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DescribeExecutionCommand,
  SendTaskFailureCommand,
  SendTaskHeartbeatCommand,
  SendTaskSuccessCommand,
  SFNClient,
  StartExecutionCommand,
  StopExecutionCommand,
} from '@aws-sdk/client-sfn';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startLocalStepFunctions, type LocalStepFunctions, type WorkerHandler } from '../../infra/local/stepfunctions';
import {
  choiceOn,
  fail,
  lambdaTask,
  lambdaWaitForTokenTask,
  substitute,
  succeed,
  validateDefinition,
  waitSeconds,
  workerArnKey,
  workersOf,
  type StateMachineDefinition,
} from '../../infra/workflows/asl';
import { STATE_MACHINES, taskWorkersOf, validateRegistry, WORKERS, type StateMachineSpec, type WorkerSpec } from '../../infra/workflows/registry';

// The generic plumbing with a machine of its own: the same API a production function
// reaches through @aws-sdk/client-sfn, over aws-local-stepfunctions.

const testDefinition = (): StateMachineDefinition => ({
  StartAt: 'Step',
  TimeoutSeconds: 600,
  States: {
    Step: lambdaTask({
      worker: 'test-step',
      parameters: { 'value.$': '$.value', 'execution.$': '$$.Execution.Name' },
      timeoutSeconds: 30,
      resultPath: '$.step',
      retry: [{ ErrorEquals: ['Flaky'], IntervalSeconds: 30, MaxAttempts: 3 }],
      catch: [{ ErrorEquals: ['States.ALL'], Next: 'Failed', ResultPath: '$.error' }],
      next: 'Route',
    }),
    Route: choiceOn('$.step.next', { token: 'AwaitToken', wait: 'LongWait' }, 'Done'),
    LongWait: waitSeconds({ seconds: 3600, next: 'Done' }),
    AwaitToken: lambdaWaitForTokenTask({
      worker: 'test-token',
      parameters: { 'value.$': '$.value' },
      timeoutSeconds: 1,
      resultPath: '$.answer',
      catch: [
        { ErrorEquals: ['States.Timeout'], Next: 'TimedOut' },
        { ErrorEquals: ['States.ALL'], Next: 'Failed', ResultPath: '$.error' },
      ],
      next: 'Done',
    }),
    TimedOut: fail('TaskTimedOut', 'Nobody answered the task token.'),
    Failed: fail('StepFailed', 'The step failed.'),
    Done: succeed(),
  },
});

const workers: WorkerSpec[] = [
  { name: 'test-step', entry: 'unused', kind: 'task', description: 'test', timeoutSeconds: 30 },
  { name: 'test-token', entry: 'unused', kind: 'task', description: 'test', timeoutSeconds: 30 },
  { name: 'test-finalizer', entry: 'unused', kind: 'execution-finalizer', description: 'test', timeoutSeconds: 30 },
];

const machine: StateMachineSpec = {
  name: 'test',
  envVar: 'TEST_STATE_MACHINE_ARN',
  description: 'test machine',
  definition: testDefinition,
  finalizer: 'test-finalizer',
  starters: [],
  stoppers: [],
  taskResponders: [],
};

const tokens: Array<{ token: string; value: string }> = [];
const finalized: Array<{ status: string; name: string; error: string | null }> = [];
const flakyCalls = new Map<string, number>();

const handlers: Record<string, WorkerHandler> = {
  async 'test-step'(event) {
    const { value, execution } = event as { value: string; execution: string };
    if (value === 'boom') throw Object.assign(new Error('the step exploded'), { name: 'Boom' });
    if (value === 'flaky') {
      const n = (flakyCalls.get(execution) ?? 0) + 1;
      flakyCalls.set(execution, n);
      if (n < 3) throw Object.assign(new Error(`attempt ${n}`), { name: 'Flaky' });
      return { next: 'done', attempts: n };
    }
    return { next: value === 'token' || value === 'token-timeout' ? 'token' : value === 'wait' ? 'wait' : 'done' };
  },
  async 'test-token'(event) {
    const { taskToken, value } = event as { taskToken: string; value: string };
    tokens.push({ token: taskToken, value });
    return null;
  },
  async 'test-finalizer'(event) {
    const detail = (event as { detail: { status: string; name: string; error: string | null } }).detail;
    finalized.push({ status: detail.status, name: detail.name, error: detail.error });
    return null;
  },
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(fn: () => T | undefined | Promise<T | undefined>): Promise<T> {
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v as T;
    await sleep(10);
  }
}

function start(dataDir: string | null = null, deferResume = false) {
  return startLocalStepFunctions({
    machines: [machine],
    workers,
    loadWorker: async (spec) => handlers[spec.name]!,
    maxWaitMs: 20,
    dataDir,
    deferResume,
    report: () => undefined,
  });
}

let sfnLocal: LocalStepFunctions;
let client: SFNClient;
let arn: string;

beforeAll(async () => {
  sfnLocal = await start();
  client = new SFNClient({ region: 'us-east-1', endpoint: sfnLocal.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  arn = sfnLocal.arns.test!;
});
afterAll(async () => {
  client?.destroy();
  await sfnLocal?.stop();
});

const startExecution = (name: string, value: string) =>
  client.send(new StartExecutionCommand({ stateMachineArn: arn, name, input: JSON.stringify({ value }) }));
const describeExecution = (executionArn: string) => client.send(new DescribeExecutionCommand({ executionArn }));
const settled = (executionArn: string) =>
  until(async () => {
    const d = await describeExecution(executionArn);
    return d.status === 'RUNNING' ? undefined : d;
  });
const errorName = (p: Promise<unknown>) =>
  p.then(
    () => 'no error',
    (e: { name?: string }) => e.name,
  );

describe('ASL builders and the registry', () => {
  it('validates definitions: targets, timeouts, reachability', () => {
    expect(() => validateDefinition(testDefinition())).not.toThrow();
    const broken = testDefinition();
    (broken.States.Route as { Default?: string }).Default = 'Nowhere';
    broken.States.Orphan = succeed();
    expect(() => validateDefinition(broken)).toThrow(/Route -> 'Nowhere'.*Orphan is unreachable/);
    expect(() => lambdaTask({ worker: 'w', parameters: {}, timeoutSeconds: 0, end: true })).toThrow(/timeout/);
    expect(() => waitSeconds({ next: 'X' })).toThrow(/exactly one/);
  });

  it('names workers by placeholder and substitutes ARNs like DefinitionSubstitutions', () => {
    const def = testDefinition();
    expect(workersOf(def, ['test-step', 'test-token', 'other'])).toEqual(['test-step', 'test-token']);
    const arns = {
      [workerArnKey('test-step')]: 'arn:aws:lambda:us-east-1:1:function:a',
      [workerArnKey('test-token')]: 'arn:aws:lambda:us-east-1:1:function:b',
    };
    const out = substitute(def, arns);
    expect(out.States.Step).toMatchObject({ Resource: 'arn:aws:lambda:us-east-1:1:function:a', TimeoutSeconds: 30 });
    expect(out.States.AwaitToken).toMatchObject({
      Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
      Parameters: { FunctionName: 'arn:aws:lambda:us-east-1:1:function:b', Payload: { 'value.$': '$.value', 'taskToken.$': '$$.Task.Token' } },
    });
  });

  it('keeps the registry consistent: task workers never start, stop or answer their own machine', () => {
    expect(() => validateRegistry()).not.toThrow();
    for (const m of STATE_MACHINES) {
      const def = m.definition();
      expect(() => validateDefinition(def), m.name).not.toThrow();
      for (const state of Object.values(def.States)) if (state.Type === 'Task') expect(state.TimeoutSeconds).toBeGreaterThan(0);
      expect(taskWorkersOf(m).length, m.name).toBeGreaterThan(0);
    }
    expect(taskWorkersOf(STATE_MACHINES.find((m) => m.name === 'fine-tuning')!)).toEqual(['fine-tune-step']);
    expect(new Set(WORKERS.map((w) => w.entry)).size).toBe(WORKERS.length);
  });
});

describe('local Step Functions API', () => {
  afterEach(() => {
    tokens.length = 0;
    finalized.length = 0;
  });

  it('runs an execution to SUCCEEDED and describes it', async () => {
    const started = await startExecution('ok-1', 'ok');
    expect(started.executionArn).toBe(`${arn.replace(':stateMachine:', ':execution:')}:ok-1`);
    const done = await settled(started.executionArn!);
    expect(done).toMatchObject({ status: 'SUCCEEDED', name: 'ok-1', stateMachineArn: arn });
    expect(JSON.parse(done.output!)).toEqual({ value: 'ok', step: { next: 'done' } });
    expect(done.startDate).toBeInstanceOf(Date);
    expect(done.stopDate).toBeInstanceOf(Date);
  });

  it('treats the execution name as an idempotency key, like AWS', async () => {
    const first = await startExecution('dup-1', 'token');
    const again = await startExecution('dup-1', 'token');
    expect(again.executionArn).toBe(first.executionArn);
    expect(await errorName(startExecution('dup-1', 'ok'))).toBe('ExecutionAlreadyExists');
    const { token } = await until(() => tokens.find((t) => t.value === 'token'));
    await client.send(new SendTaskSuccessCommand({ taskToken: token, output: '{}' }));
    await settled(first.executionArn!);
    expect(await errorName(startExecution('dup-1', 'token'))).toBe('ExecutionAlreadyExists');
    expect(await errorName(startExecution('bad name', 'ok'))).toBe('InvalidName');
    expect(await errorName(client.send(new StartExecutionCommand({ stateMachineArn: `${arn}-nope`, name: 'x' })))).toBe('StateMachineDoesNotExist');
    expect(await errorName(describeExecution(`${first.executionArn}-nope`))).toBe('ExecutionDoesNotExist');
  });

  it('emulates .waitForTaskToken: success output, failure, heartbeat, closed tokens', async () => {
    const ok = await startExecution('token-ok', 'token');
    const { token } = await until(() => tokens.find((t) => t.value === 'token'));
    expect(token).not.toContain('placeholder');
    await client.send(new SendTaskHeartbeatCommand({ taskToken: token }));
    await client.send(new SendTaskSuccessCommand({ taskToken: token, output: JSON.stringify({ answer: 42 }) }));
    const done = await settled(ok.executionArn!);
    expect(done.status).toBe('SUCCEEDED');
    expect(JSON.parse(done.output!).answer).toEqual({ answer: 42 });
    expect(await errorName(client.send(new SendTaskSuccessCommand({ taskToken: token, output: '{}' })))).toBe('TaskTimedOut');
    expect(await errorName(client.send(new SendTaskSuccessCommand({ taskToken: 'unknown', output: '{}' })))).toBe('TaskDoesNotExist');

    tokens.length = 0;
    const failed = await startExecution('token-fail', 'token');
    const second = await until(() => tokens[0]);
    await client.send(new SendTaskFailureCommand({ taskToken: second.token, error: 'Refused', cause: 'no thanks' }));
    const out = await settled(failed.executionArn!);
    expect(out).toMatchObject({ status: 'FAILED', error: 'StepFailed' });
    await until(() => finalized.find((f) => f.name === 'token-fail'));
    expect(finalized.find((f) => f.name === 'token-fail')).toMatchObject({ status: 'FAILED', error: 'StepFailed' });
  });

  it('times a token task out with States.Timeout', async () => {
    const started = await startExecution('token-timeout', 'token-timeout');
    const done = await settled(started.executionArn!);
    expect(done).toMatchObject({ status: 'FAILED', error: 'TaskTimedOut' });
  });

  it('caps Wait states and retry intervals locally', async () => {
    const waited = await startExecution('long-wait', 'wait');
    expect((await settled(waited.executionArn!)).status).toBe('SUCCEEDED');
    const retried = await startExecution('flaky', 'flaky');
    const done = await settled(retried.executionArn!);
    expect(done.status).toBe('SUCCEEDED');
    expect(JSON.parse(done.output!).step).toEqual({ next: 'done', attempts: 3 });
  });

  it('catches task errors by name and reports FAILED to the finalizer', async () => {
    const started = await startExecution('boom', 'boom');
    const done = await settled(started.executionArn!);
    expect(done).toMatchObject({ status: 'FAILED', error: 'StepFailed', cause: 'The step failed.' });
    await until(() => finalized.find((f) => f.name === 'boom'));
  });

  it('stops an execution waiting on a token (ABORTED, finalizer notified, token closed)', async () => {
    const started = await startExecution('stop-me', 'token');
    const { token } = await until(() => tokens[0]);
    await client.send(new StopExecutionCommand({ executionArn: started.executionArn!, error: 'Cancelled', cause: 'by the test' }));
    const d = await describeExecution(started.executionArn!);
    expect(d).toMatchObject({ status: 'ABORTED', error: 'Cancelled', cause: 'by the test' });
    expect(finalized).toContainEqual({ status: 'ABORTED', name: 'stop-me', error: 'Cancelled' });
    expect(await errorName(client.send(new SendTaskSuccessCommand({ taskToken: token, output: '{}' })))).toBe('TaskTimedOut');
    expect(sfnLocal.running()).toBe(0);
  });

  it('leaves no timer behind once stopped, even with executions waiting', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const local = await start();
    const c = new SFNClient({ region: 'us-east-1', endpoint: local.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    await c.send(new StartExecutionCommand({ stateMachineArn: local.arns.test, name: 'pending', input: JSON.stringify({ value: 'token' }) }));
    await until(() => local.running() === 1 && tokens.length > 0);
    c.destroy();
    await local.stop();
    expect(timers()).toBeLessThanOrEqual(before);
  });

  /** An emulator on `dir` stopped while an execution named `name` waits for its token. */
  async function stopWithOneRunning(dir: string, name: string): Promise<void> {
    const first = await start(dir);
    const c1 = new SFNClient({ region: 'us-east-1', endpoint: first.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    await c1.send(new StartExecutionCommand({ stateMachineArn: first.arns.test, name, input: JSON.stringify({ value: 'token' }) }));
    await until(() => tokens.length === 1);
    c1.destroy();
    await first.stop();
  }

  it('resumes running executions after a restart when given a data folder', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sfn-local-'));
    try {
      await stopWithOneRunning(dir, 'survivor');
      expect(finalized).toEqual([]); // stopping the emulator is not the end of an execution

      const second = await start(dir);
      try {
        await until(() => tokens.length === 2); // the task ran again, with a new token
        expect(second.running()).toBe(1);
        const c2 = new SFNClient({ region: 'us-east-1', endpoint: second.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
        await c2.send(new SendTaskSuccessCommand({ taskToken: tokens[1]!.token, output: '{}' }));
        await until(() => second.running() === 0);
        c2.destroy();
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('with deferResume, re-runs the saved executions only when told to, and once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sfn-local-'));
    try {
      await stopWithOneRunning(dir, 'deferred');

      const second = await start(dir, true);
      try {
        // Its workers' settings are not in place yet: nothing runs until resumeSaved().
        await sleep(200);
        expect(second.running()).toBe(0);
        expect(tokens).toHaveLength(1);
        second.resumeSaved();
        second.resumeSaved();
        await until(() => tokens.length === 2);
        expect(second.running()).toBe(1);
        await sleep(100);
        expect(tokens).toHaveLength(2);
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the history limit', () => {
  // A loop of Task (5 events as AWS counts them), Choice (2) and Wait (2): 9 a round.
  const loopDefinition = (): StateMachineDefinition => ({
    StartAt: 'Count',
    TimeoutSeconds: 600,
    States: {
      Count: lambdaTask({
        worker: 'test-step',
        parameters: { 'value.$': '$.value', 'execution.$': '$$.Execution.Name' },
        timeoutSeconds: 30,
        resultPath: '$.step',
        next: 'Route',
      }),
      Route: choiceOn('$.step.next', { wait: 'Pause' }, 'Done'),
      Pause: waitSeconds({ seconds: 1, next: 'Count' }),
      Done: succeed(),
    },
  });
  const rounds = new Map<string, number>();
  const loopHandlers: Record<string, WorkerHandler> = {
    async 'test-step'(event) {
      const { value, execution } = event as { value: string; execution: string };
      const n = (rounds.get(execution) ?? 0) + 1;
      rounds.set(execution, n);
      return { next: n < Number(value) ? 'wait' : 'done' };
    },
    'test-finalizer': handlers['test-finalizer']!,
  };
  let looper: LocalStepFunctions;
  let c: SFNClient;

  beforeAll(async () => {
    looper = await startLocalStepFunctions({
      machines: [{ ...machine, name: 'looper', envVar: 'LOOPER_ARN', definition: loopDefinition }],
      workers,
      loadWorker: async (spec) => loopHandlers[spec.name]!,
      maxWaitMs: 1,
      historyLimit: 200,
      report: () => undefined,
    });
    c = new SFNClient({ region: 'us-east-1', endpoint: looper.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  });
  afterAll(async () => {
    c?.destroy();
    await looper?.stop();
  });
  afterEach(() => {
    finalized.length = 0;
  });

  const run = async (name: string, roundsWanted: number) => {
    const started = await c.send(
      new StartExecutionCommand({ stateMachineArn: looper.arns.looper, name, input: JSON.stringify({ value: String(roundsWanted) }) }),
    );
    return until(async () => {
      const d = await c.send(new DescribeExecutionCommand({ executionArn: started.executionArn }));
      return d.status === 'RUNNING' ? undefined : d;
    });
  };

  it('lets an execution under the limit finish', async () => {
    // 20 rounds: ~180 events with the execution's own, under 200.
    expect((await run('short-loop', 20)).status).toBe('SUCCEEDED');
    expect(rounds.get('short-loop')).toBe(20);
  });

  it('fails an execution whose history passes the limit, as AWS does, and tells the finalizer', async () => {
    const done = await run('long-loop', 1000);
    expect(done).toMatchObject({ status: 'FAILED', error: 'States.Runtime' });
    expect(done.cause).toContain('200 events');
    // It stopped within a round of the limit: 200 / 9 = 22 rounds.
    expect(rounds.get('long-loop')).toBeGreaterThanOrEqual(21);
    expect(rounds.get('long-loop')).toBeLessThanOrEqual(24);
    await until(() => finalized.length === 1);
    expect(finalized[0]).toMatchObject({ status: 'FAILED', name: 'long-loop', error: 'States.Runtime' });
  });
});
