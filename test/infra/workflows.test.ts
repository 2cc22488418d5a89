import type { App, CfnElement, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { beforeAll, describe, expect, it } from 'vitest';
import { TABLE_NAMES } from '../../functions/shared/tables';
import {
  DYNAMODB_READ_ACTIONS,
  DYNAMODB_WRITE_ACTIONS,
  FILES_KEY_ACTIONS,
  FILES_OBJECT_ACTIONS,
  KMS_ACTIONS,
  WORKER_ACCESS,
  type TableAccess,
} from '../../infra/stacks/access';
import { buildApp, type GatewayStacks } from '../../infra/stacks/index';
import { workerArnKey } from '../../infra/workflows/asl';
import { QUEUES, STATE_MACHINES, stateMachineName, taskWorkersOf, WORKERS } from '../../infra/workflows/registry';
import { testApp } from '../support/cdk-app';

// One synthesis (bundling skipped) with cdk-nag on; the assertions read the templates.
let app: App;
let stacks: GatewayStacks;
let wf: Template;
let api: Template;
let synthError: Error | undefined;

type Json = Record<string, any>;
const OPTIONS = { stage: 'test', logRetentionDays: RetentionDays.TWO_WEEKS, memorySize: 1536 };
const skipBundling = () => testApp({ context: { 'aws:cdk:bundling-stacks': [] } });
const logicalId = (stack: Stack, element: unknown) => stack.getLogicalId(element as CfnElement);

beforeAll(() => {
  app = skipBundling();
  stacks = buildApp(app, OPTIONS);
  try {
    app.synth();
  } catch (err) {
    synthError = err as Error;
    stacks = buildApp(skipBundling(), { ...OPTIONS, nag: false });
  }
  wf = Template.fromStack(stacks.workflows);
  api = Template.fromStack(stacks.api);
});

const workerFnId = (name: string) => logicalId(stacks.workflows, stacks.workflows.workers[name]!.function.node.defaultChild);
const policyOf = (template: Template, stack: Stack, role: { node: { tryFindChild(id: string): unknown } }) => {
  const policy = role.node.tryFindChild('DefaultPolicy') as { node: { defaultChild: unknown } } | undefined;
  if (!policy) return [];
  const res = template.findResources('AWS::IAM::Policy')[logicalId(stack, policy.node.defaultChild)]!;
  return (res.Properties as Json).PolicyDocument.Statement as Array<{ Sid?: string; Action: string | string[]; Resource: unknown }>;
};
const actions = (s: { Action: string | string[] }) => (Array.isArray(s.Action) ? s.Action : [s.Action]);

describe('workflows stack: state machines', () => {
  it('has one Standard state machine per registry entry, built from the shared ASL', () => {
    wf.resourceCountIs('AWS::StepFunctions::StateMachine', STATE_MACHINES.length);
    for (const spec of STATE_MACHINES) {
      const machine = stacks.workflows.stateMachines[spec.name]!;
      const res = wf.findResources('AWS::StepFunctions::StateMachine')[logicalId(stacks.workflows, machine.node.defaultChild)]!;
      const p = res.Properties as Json;
      expect(p).toMatchObject({
        StateMachineName: stateMachineName('test', spec.name),
        StateMachineType: 'STANDARD',
        TracingConfiguration: { Enabled: true },
        LoggingConfiguration: { Level: 'ALL', IncludeExecutionData: false },
      });
      // The same definition the local runtime executes, with the worker ARNs substituted.
      expect(JSON.parse(p.DefinitionString)).toEqual(spec.definition());
      const tasks = taskWorkersOf(spec);
      expect(Object.keys(p.DefinitionSubstitutions).sort()).toEqual(tasks.map(workerArnKey).sort());
      for (const t of tasks) expect(p.DefinitionSubstitutions[workerArnKey(t)]).toEqual({ 'Fn::GetAtt': [workerFnId(t), 'Arn'] });
      for (const state of Object.values(spec.definition().States)) {
        if (state.Type === 'Task') expect(state.TimeoutSeconds).toBeGreaterThan(0);
      }
    }
  });

  it('lets each machine invoke exactly its task workers, and no task worker touch its machine', () => {
    for (const spec of STATE_MACHINES) {
      const machine = stacks.workflows.stateMachines[spec.name]!;
      const statements = policyOf(wf, stacks.workflows, machine.role as never);
      const invoke = statements.filter((s) => actions(s).includes('lambda:InvokeFunction'));
      expect(invoke).toHaveLength(1);
      const resources = [invoke[0]!.Resource].flat();
      expect(resources).toEqual(taskWorkersOf(spec).map((t) => ({ 'Fn::GetAtt': [workerFnId(t), 'Arn'] })));
      for (const t of taskWorkersOf(spec)) {
        const own = policyOf(wf, stacks.workflows, stacks.workflows.workers[t]!.role);
        expect(
          own.flatMap(actions).filter((a) => a.startsWith('states:')),
          t,
        ).toEqual([]);
      }
    }
  });

  it('sends executions that end FAILED / TIMED_OUT / ABORTED to the finalizer', () => {
    for (const spec of STATE_MACHINES.filter((m) => m.finalizer)) {
      const machine = stacks.workflows.stateMachines[spec.name]!;
      wf.hasResourceProperties('AWS::Events::Rule', {
        EventPattern: {
          source: ['aws.states'],
          'detail-type': ['Step Functions Execution Status Change'],
          detail: { stateMachineArn: [{ Ref: logicalId(stacks.workflows, machine.node.defaultChild) }], status: ['FAILED', 'TIMED_OUT', 'ABORTED'] },
        },
        Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [workerFnId(spec.finalizer!), 'Arn'] } })],
      });
    }
  });
});

describe('workflows stack: workers', () => {
  it('runs the run reconciler every minute, allowed to describe the runs executions and nothing more of Step Functions', () => {
    const reconciler = WORKERS.find((w) => w.name === 'run-reconcile')!;
    expect(reconciler).toMatchObject({ kind: 'scheduled', scheduleMinutes: 1 });
    wf.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [workerFnId('run-reconcile'), 'Arn'] } })],
    });
    const own = policyOf(wf, stacks.workflows, stacks.workflows.workers['run-reconcile']!.role);
    const states = own.filter((s) => actions(s).some((a) => a.startsWith('states:') || a.startsWith('sqs:')));
    expect(states.map(actions)).toEqual([['states:DescribeExecution']]);
    expect(JSON.stringify(states[0]!.Resource)).toContain(`:execution:${stateMachineName('test', 'runs')}:*`);
    const env = (wf.findResources('AWS::Lambda::Function')[workerFnId('run-reconcile')]!.Properties as Json).Environment.Variables;
    expect(env.RUN_STATE_MACHINE_ARN).toEqual({ Ref: logicalId(stacks.workflows, stacks.workflows.stateMachines.runs!.node.defaultChild) });
  });

  it('has one function per worker: runtime, arch, timeout, JSON logs, tracing', () => {
    wf.resourceCountIs('AWS::Lambda::Function', WORKERS.length);
    for (const w of WORKERS) {
      const res = wf.findResources('AWS::Lambda::Function')[workerFnId(w.name)]!;
      expect(res.Properties).toMatchObject({
        FunctionName: `ai-gateway-test-${w.name}`,
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        Timeout: w.timeoutSeconds,
        TracingConfig: { Mode: 'Active' },
        LoggingConfig: { LogFormat: 'JSON' },
      });
    }
  });

  it.each(WORKERS.map((w) => w.name))('%s reaches exactly the tables and key uses of WORKER_ACCESS', (name) => {
    const statements = policyOf(wf, stacks.workflows, stacks.workflows.workers[name]!.role);
    const granted: Record<string, TableAccess> = {};
    for (const s of statements.filter((st) => actions(st).some((a) => a.startsWith('dynamodb:')))) {
      const text = JSON.stringify(s.Resource);
      const tables = TABLE_NAMES.filter((t) => text.includes(`FnGetAtt${t[0]!.toUpperCase()}${t.slice(1)}Table`));
      expect(tables).toHaveLength(1);
      const write = actions(s).some((a) => (DYNAMODB_WRITE_ACTIONS as readonly string[]).includes(a));
      expect(actions(s)).toEqual([...DYNAMODB_READ_ACTIONS, ...(write ? DYNAMODB_WRITE_ACTIONS : [])]);
      granted[tables[0]!] = write ? 'readWrite' : 'read';
    }
    expect(granted).toEqual(WORKER_ACCESS[name]!.tables);
    // The files bucket's key (FilesKey) is the files grant's, checked below; the rest is the credentials key.
    const kms = statements.filter((s) => s.Sid !== 'FilesKey' && actions(s).some((a) => a.startsWith('kms:'))).flatMap(actions);
    expect(kms.sort()).toEqual([...KMS_ACTIONS[WORKER_ACCESS[name]!.providerCredentials]].sort());
    const files = statements.filter((s) => s.Sid === 'FilesObjects' || s.Sid === 'FilesKey').flatMap(actions);
    const filesGrant = WORKER_ACCESS[name]!.filesBucket ? [...FILES_OBJECT_ACTIONS, ...FILES_KEY_ACTIONS] : [];
    expect(files.sort()).toEqual(filesGrant.sort());
    for (const s of statements.filter((st) => JSON.stringify(st.Resource) === '"*"')) expect(actions(s).every((a) => a.startsWith('xray:'))).toBe(true);
  });

  it('gives starters, stoppers and producers their env vars and nothing wider than their resource', () => {
    const fineTuning = STATE_MACHINES.find((m) => m.name === 'fine-tuning')!;
    const machineRef = { Ref: logicalId(stacks.workflows, stacks.workflows.stateMachines['fine-tuning']!.node.defaultChild) };
    // The start consumer starts executions of its machine.
    const start = policyOf(wf, stacks.workflows, stacks.workflows.workers['fine-tune-start']!.role);
    expect(start.find((s) => actions(s).includes('states:StartExecution'))!.Resource).toEqual(machineRef);
    const startEnv = (wf.findResources('AWS::Lambda::Function')[workerFnId('fine-tune-start')]!.Properties as Json).Environment.Variables;
    expect(startEnv[fineTuning.envVar]).toEqual(machineRef);

    // The fine-tuning API function stops executions (hard stop) and sends to the jobs queue.
    const fn = stacks.api.functions['fine-tuning']!;
    const statements = policyOf(api, stacks.api, fn.role);
    const stop = statements.find((s) => actions(s).includes('states:StopExecution'))!;
    expect(actions(stop).sort()).toEqual(['states:DescribeExecution', 'states:StopExecution']);
    expect(JSON.stringify(stop.Resource)).toContain(`:execution:${stateMachineName('test', 'fine-tuning')}:*`);
    expect(statements.flatMap(actions)).not.toContain('states:StartExecution');
    const send = statements.find((s) => actions(s).includes('sqs:SendMessage'))!;
    expect(JSON.stringify(send.Resource)).toContain('FineTuningJobsQueue');
    const env = (api.findResources('AWS::Lambda::Function')[logicalId(stacks.api, fn.function.node.defaultChild)]!.Properties as Json).Environment.Variables;
    expect(JSON.stringify(env[fineTuning.envVar])).toContain('FineTuningStateMachine');
    expect(JSON.stringify(env.FINE_TUNING_QUEUE_URL)).toContain('FineTuningJobsQueue');
    // Other API functions get nothing of it.
    const policies = policyOf(api, stacks.api, stacks.api.functions.policies!.role);
    expect(policies.flatMap(actions).some((a) => a.startsWith('states:') || a.startsWith('sqs:'))).toBe(false);
  });

  it('wires assistant runs: the consumer starts, the assistants API enqueues, stops and answers tokens, the task worker touches nothing', () => {
    const runs = STATE_MACHINES.find((m) => m.name === 'runs')!;
    const machineRef = { Ref: logicalId(stacks.workflows, stacks.workflows.stateMachines.runs!.node.defaultChild) };
    const queueArn = { 'Fn::GetAtt': [logicalId(stacks.workflows, stacks.workflows.queues.runs!.queue.node.defaultChild), 'Arn'] };

    // run-start (queue consumer) starts executions of the runs machine, nothing else of it.
    const start = policyOf(wf, stacks.workflows, stacks.workflows.workers['run-start']!.role);
    expect(start.filter((s) => actions(s).some((a) => a.startsWith('states:'))).map((s) => [actions(s), s.Resource])).toEqual([
      [['states:StartExecution'], machineRef],
    ]);
    const startEnv = (wf.findResources('AWS::Lambda::Function')[workerFnId('run-start')]!.Properties as Json).Environment.Variables;
    expect(startEnv[runs.envVar]).toEqual(machineRef);

    // run-step (the machine's only task worker) and run-finalize neither start, stop, answer nor
    // enqueue runs; run-step's model calls write request-log records, which go to the
    // log-records queue when their write keeps being throttled.
    expect(taskWorkersOf(runs)).toEqual(['run-step']);
    const logRecordsArn = { 'Fn::GetAtt': [logicalId(stacks.workflows, stacks.workflows.queues['log-records']!.queue.node.defaultChild), 'Arn'] };
    for (const w of ['run-step', 'run-finalize']) {
      const own = policyOf(wf, stacks.workflows, stacks.workflows.workers[w]!.role);
      expect(
        own.flatMap(actions).filter((a) => a.startsWith('states:')),
        w,
      ).toEqual([]);
      expect(
        own.filter((s) => actions(s).some((a) => a.startsWith('sqs:'))).map((s) => [actions(s), s.Resource]),
        w,
      ).toEqual(w === 'run-step' ? [[['sqs:SendMessage'], logRecordsArn]] : []);
    }

    // The assistants API function: send to the runs queue, stop (and describe) its executions,
    // answer its task tokens; never start an execution.
    const fn = stacks.api.functions.assistants!;
    const statements = policyOf(api, stacks.api, fn.role);
    const stop = statements.find((s) => actions(s).includes('states:StopExecution') && JSON.stringify(s.Resource).includes(stateMachineName('test', 'runs')))!;
    expect(actions(stop).sort()).toEqual(['states:DescribeExecution', 'states:StopExecution']);
    expect(JSON.stringify(stop.Resource)).toContain(`:execution:${stateMachineName('test', 'runs')}:*`);
    const respond = statements.find((s) => actions(s).includes('states:SendTaskSuccess'))!;
    expect(actions(respond).sort()).toEqual(['states:SendTaskFailure', 'states:SendTaskHeartbeat', 'states:SendTaskSuccess']);
    expect(JSON.stringify(respond.Resource)).toContain('RunsStateMachine');
    expect(statements.flatMap(actions)).not.toContain('states:StartExecution');
    const send = statements.find((s) => actions(s).includes('sqs:SendMessage'))!;
    expect(JSON.stringify(send.Resource)).toContain('RunsQueue');
    expect(JSON.stringify(send.Resource)).not.toContain('DeadLetter');
    const env = (api.findResources('AWS::Lambda::Function')[logicalId(stacks.api, fn.function.node.defaultChild)]!.Properties as Json).Environment.Variables;
    expect(JSON.stringify(env.RUN_STATE_MACHINE_ARN)).toContain('RunsStateMachine');
    expect(JSON.stringify(env.RUN_QUEUE_URL)).toContain('RunsQueue');

    // The FIFO queue feeds run-start one message at a time.
    const q = wf.findResources('AWS::SQS::Queue')[logicalId(stacks.workflows, stacks.workflows.queues.runs!.queue.node.defaultChild)]!.Properties as Json;
    expect(q).toMatchObject({ FifoQueue: true, QueueName: 'ai-gateway-test-runs.fifo', ContentBasedDeduplication: false });
    wf.hasResourceProperties('AWS::Lambda::EventSourceMapping', { EventSourceArn: queueArn, FunctionName: { Ref: workerFnId('run-start') }, BatchSize: 1 });

    // The definition: token wait with the default 600 s timeout -> MarkExpired on States.Timeout.
    const def = runs.definition();
    expect(def.States.WaitForToolOutputs).toMatchObject({
      Type: 'Task',
      Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
      TimeoutSeconds: 600,
      Parameters: { Payload: { action: 'wait', timeoutSeconds: 600, 'taskToken.$': '$$.Task.Token' } },
      Catch: expect.arrayContaining([{ ErrorEquals: ['States.Timeout'], Next: 'MarkExpired', ResultPath: '$.error' }]),
    });
    expect(def.States.ModelStep).toMatchObject({ Catch: [{ ErrorEquals: ['States.ALL'], Next: 'MarkFailed', ResultPath: '$.error' }] });
  });

  it('deploys before the API stack that references it (no dependency cycle)', () => {
    expect(stacks.api.dependencies).toContain(stacks.workflows);
    expect(stacks.workflows.dependencies).not.toContain(stacks.api);
  });
});

describe('workflows stack: queues', () => {
  it('gives every queue an encrypted, SSL-only dead-letter queue and a partial-batch consumer', () => {
    for (const spec of QUEUES) {
      const { queue, deadLetterQueue } = stacks.workflows.queues[spec.name]!;
      const q = wf.findResources('AWS::SQS::Queue')[logicalId(stacks.workflows, queue.node.defaultChild)]!.Properties as Json;
      expect(q).toMatchObject({
        SqsManagedSseEnabled: true,
        VisibilityTimeout: spec.visibilityTimeoutSeconds,
        RedrivePolicy: {
          deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(stacks.workflows, deadLetterQueue.node.defaultChild), 'Arn'] },
          maxReceiveCount: spec.maxReceiveCount,
        },
      });
      if (spec.fifo) expect(q).toMatchObject({ FifoQueue: true, DeduplicationScope: 'messageGroup', FifoThroughputLimit: 'perMessageGroupId' });
      wf.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: { 'Fn::GetAtt': [logicalId(stacks.workflows, queue.node.defaultChild), 'Arn'] },
        FunctionName: { Ref: workerFnId(spec.consumer) },
        BatchSize: spec.batchSize,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
    }
    // Every queue (DLQs included) refuses plain-HTTP access.
    wf.resourceCountIs('AWS::SQS::QueuePolicy', QUEUES.length * 2);
    wf.allResourcesProperties('AWS::SQS::QueuePolicy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
    });
  });
});

describe('cdk-nag (AwsSolutions) with the workflows stack', () => {
  it('has no unacknowledged findings', () => {
    expect(synthError?.message).toBeUndefined();
  });
});
