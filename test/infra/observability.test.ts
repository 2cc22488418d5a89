import { type App, Duration, type CfnElement, type Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildApp, resolveOptions, type GatewayStacks } from '../../infra/stacks/index';
import { EMF_METRICS, METRICS_NAMESPACE, ObservabilityStack, THRESHOLDS } from '../../infra/stacks/observability-stack';
import { indexesOf, TABLE_SPECS } from '../../infra/tables';
import { ENDPOINT_GROUPS } from '../../infra/endpoint-groups';
import { deadLetterQueueName, QUEUES, STATE_MACHINES, stateMachineName, WORKERS } from '../../infra/workflows/registry';
import { testApp } from '../support/cdk-app';

// One synthesis of the whole app (bundling skipped, cdk-nag on, an alarm email given).
let app: App;
let stacks: GatewayStacks;
let obs: Template;
let api: Template;
let data: Template;
let wf: Template;
let synthError: Error | undefined;

type Json = Record<string, any>;
const OPTIONS = { stage: 'test', logRetentionDays: RetentionDays.TWO_WEEKS, memorySize: 1536, alarmEmail: 'ops@example.com' };
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
  obs = Template.fromStack(stacks.observability);
  api = Template.fromStack(stacks.api);
  data = Template.fromStack(stacks.data);
  wf = Template.fromStack(stacks.workflows);
});

const alarms = () => Object.values(obs.findResources('AWS::CloudWatch::Alarm')).map((r) => r.Properties as Json);
const alarmNamed = (name: string) => {
  const found = alarms().find((a) => a.AlarmName === `ai-gateway-test-${name}`);
  if (!found) throw new Error(`no alarm ai-gateway-test-${name}`);
  return found;
};
const dims = (a: Json) => Object.fromEntries((a.Dimensions as Array<{ Name: string; Value: unknown }>).map((d) => [d.Name, d.Value]));
const topicRef = () => ({ Ref: logicalId(stacks.observability, stacks.observability.topic.node.defaultChild) });
/** Asserts that `value` reads `element`'s name from its stack's outputs (a weak reference). */
const expectWeakRef = (value: unknown, stack: Stack, element: unknown) => {
  const ref = (value as { 'Fn::GetStackOutput'?: { StackName: string; OutputName: string } })['Fn::GetStackOutput'];
  expect(ref?.StackName).toBe(stack.stackName);
  const outputs = (stack === stacks.api ? api : stack === stacks.data ? data : wf).toJSON().Outputs as Record<string, { Value: unknown }>;
  expect(outputs[ref!.OutputName]?.Value).toEqual({ Ref: logicalId(stack, element) });
};

describe('observability stack: alarms', () => {
  it('has one alarm per signal: API 5XX rate, 3 per function, 1 per DLQ, 3 per state machine, 1 per table and index beyond the first, 3 quotas, dead-lettered log records', () => {
    const functions = Object.keys(stacks.api.functions).length + Object.keys(stacks.workflows.workers).length;
    expect(functions).toBe(ENDPOINT_GROUPS.length + WORKERS.length);
    const extraIndexes = TABLE_SPECS.reduce((n, t) => n + Math.max(0, indexesOf(t).length - 1), 0);
    expect(extraIndexes).toBeGreaterThanOrEqual(4); // the request log's meta_* indexes
    const expected = 1 + 3 * functions + QUEUES.length + 3 * STATE_MACHINES.length + TABLE_SPECS.length + extraIndexes + 3 + 1;
    obs.resourceCountIs('AWS::CloudWatch::Alarm', expected);
    expect(stacks.observability.alarms).toHaveLength(expected);
    expect(new Set(alarms().map((a) => a.AlarmName)).size).toBe(expected);
  });

  it('notifies the topic on alarm and on recovery; no data is not an alarm', () => {
    for (const a of alarms()) {
      expect(a.AlarmName).toMatch(/^ai-gateway-test-/);
      expect(a.AlarmActions, a.AlarmName).toEqual([topicRef()]);
      expect(a.OKActions, a.AlarmName).toEqual([topicRef()]);
      expect(a.TreatMissingData).toBe('notBreaching');
      expect(a.ComparisonOperator).toBe('GreaterThanOrEqualToThreshold');
      expect(a.AlarmDescription).toMatch(/^AI gateway \(test\): /);
    }
  });

  it('alarms on the API 5XX rate: math over Count and 5XXError of the stage', () => {
    const a = alarmNamed('api-5xx-rate');
    expect(a).toMatchObject({ Threshold: THRESHOLDS.api5xxRatePercent, EvaluationPeriods: 3, DatapointsToAlarm: 2 });
    const metrics = a.Metrics as Json[];
    expect(metrics.find((m) => m.ReturnData !== false)!.Expression).toBe(`IF(requests >= ${THRESHOLDS.api5xxMinRequests}, 100 * errors / requests, 0)`);
    const stat = (id: string) => metrics.find((m) => m.Id === id)!.MetricStat;
    const apiDims = [
      { Name: 'ApiName', Value: 'ai-gateway-test' },
      { Name: 'Stage', Value: 'test' },
    ];
    expect(stat('requests')).toEqual({ Metric: { Namespace: 'AWS/ApiGateway', MetricName: 'Count', Dimensions: apiDims }, Period: 300, Stat: 'Sum' });
    expect(stat('errors')).toEqual({ Metric: { Namespace: 'AWS/ApiGateway', MetricName: '5XXError', Dimensions: apiDims }, Period: 300, Stat: 'Sum' });
    // Those dimensions are the deployed API's.
    api.hasResourceProperties('AWS::ApiGateway::RestApi', { Name: 'ai-gateway-test' });
    api.hasResourceProperties('AWS::ApiGateway::Stage', { StageName: 'test' });
  });

  it('alarms on errors, throttles and p99 duration near the timeout of every endpoint-group function', () => {
    for (const [group, fn] of Object.entries(stacks.api.functions)) {
      const element = fn.function.node.defaultChild;
      const errors = alarmNamed(`lambda-errors-${group}`);
      expect(errors).toMatchObject({ Namespace: 'AWS/Lambda', MetricName: 'Errors', Statistic: 'Sum', Threshold: 1, Period: 300 });
      expectWeakRef(dims(errors).FunctionName, stacks.api, element);
      expect(alarmNamed(`lambda-throttles-${group}`)).toMatchObject({ MetricName: 'Throttles', Statistic: 'Sum', Threshold: 1 });
      const duration = alarmNamed(`lambda-duration-p99-${group}`);
      expect(duration).toMatchObject({ MetricName: 'Duration', ExtendedStatistic: 'p99', EvaluationPeriods: 2 });
      expect(duration.Threshold).toBe(900_000 * THRESHOLDS.durationShareOfTimeout);
      expectWeakRef(dims(duration).FunctionName, stacks.api, element);
    }
  });

  it('alarms on every workflow worker by its fixed function name', () => {
    for (const w of WORKERS) {
      const functionName = `ai-gateway-test-${w.name}`;
      wf.hasResourceProperties('AWS::Lambda::Function', { FunctionName: functionName, Timeout: w.timeoutSeconds });
      for (const [kind, metric] of [
        ['errors', 'Errors'],
        ['throttles', 'Throttles'],
        ['duration-p99', 'Duration'],
      ] as const) {
        const a = alarmNamed(`lambda-${kind}-${w.name}`);
        expect(a.MetricName).toBe(metric);
        expect(dims(a)).toEqual({ FunctionName: functionName });
      }
      expect(alarmNamed(`lambda-duration-p99-${w.name}`).Threshold).toBe(w.timeoutSeconds * 1000 * THRESHOLDS.durationShareOfTimeout);
    }
  });

  it('alarms as soon as a message reaches a dead-letter queue', () => {
    for (const q of QUEUES) {
      const queueName = deadLetterQueueName('test', q);
      wf.hasResourceProperties('AWS::SQS::Queue', { QueueName: queueName });
      const a = alarmNamed(`dlq-${q.name}`);
      expect(a).toMatchObject({ Namespace: 'AWS/SQS', MetricName: 'ApproximateNumberOfMessagesVisible', Statistic: 'Maximum', Period: 60, Threshold: 1 });
      expect(dims(a)).toEqual({ QueueName: queueName });
    }
  });

  it('alarms on request-log records sent to the log-records queue (their write kept being throttled), whose own DLQ is alarmed too', () => {
    const a = alarmNamed('log-write-dead-lettered');
    expect(a).toMatchObject({ Namespace: METRICS_NAMESPACE, MetricName: 'LogWriteDeadLettered', Statistic: 'Sum', Threshold: 1 });
    expect(dims(a)).toEqual({ service: 'ai-gateway' });
    expect(QUEUES.map((q) => q.name)).toContain('log-records');
    expect(alarmNamed('dlq-log-records').Threshold).toBe(1);
  });

  it('alarms on failed, timed-out and throttled executions of every state machine', () => {
    for (const m of STATE_MACHINES) {
      for (const [kind, metric] of [
        ['failed', 'ExecutionsFailed'],
        ['timed-out', 'ExecutionsTimedOut'],
        ['throttled', 'ExecutionThrottled'],
      ] as const) {
        const a = alarmNamed(`sfn-${kind}-${m.name}`);
        expect(a).toMatchObject({ Namespace: 'AWS/States', MetricName: metric, Statistic: 'Sum', Threshold: 1 });
        expect(JSON.stringify(dims(a).StateMachineArn)).toContain(`:stateMachine:${stateMachineName('test', m.name)}"`);
      }
    }
  });

  it('alarms on read and write throttle events of every table and its index', () => {
    for (const spec of TABLE_SPECS) {
      const a = alarmNamed(`dynamodb-throttles-${spec.name}`);
      expect(a.Threshold).toBe(1);
      const metrics = a.Metrics as Json[];
      const stats = metrics.filter((m) => m.MetricStat).map((m) => m.MetricStat.Metric);
      expect(stats.map((s) => s.MetricName).sort()).toEqual(
        (spec.gsi1
          ? ['ReadThrottleEvents', 'ReadThrottleEvents', 'WriteThrottleEvents', 'WriteThrottleEvents']
          : ['ReadThrottleEvents', 'WriteThrottleEvents']
        ).sort(),
      );
      for (const s of stats) {
        expect(s.Namespace).toBe('AWS/DynamoDB');
        const d = dims(s);
        expectWeakRef(d.TableName, stacks.data, stacks.data.tables[spec.name].node.defaultChild);
        if (d.GlobalSecondaryIndexName) expect(d.GlobalSecondaryIndexName).toBe('gsi1');
      }
      expect(metrics.find((m) => m.Expression)!.Expression).toMatch(/^FILL\(\w+, 0\)( \+ FILL\(\w+, 0\))+$/);
      // Every further index (an alarm may use at most 10 metrics) has an alarm of its own.
      for (const index of indexesOf(spec).slice(1)) {
        const ia = alarmNamed(`dynamodb-throttles-${spec.name}-${index.name}`);
        const indexStats = (ia.Metrics as Json[]).filter((m) => m.MetricStat).map((m) => m.MetricStat.Metric);
        expect(indexStats.map((st) => st.MetricName).sort()).toEqual(['ReadThrottleEvents', 'WriteThrottleEvents']);
        for (const st of indexStats) expect(dims(st).GlobalSecondaryIndexName).toBe(index.name);
      }
    }
  });

  it("alarms at 80% of the account's Lambda concurrency, on API Gateway throttling and on the KMS request rate", () => {
    const concurrency = alarmNamed('lambda-account-concurrency');
    expect(concurrency).toMatchObject({ Namespace: 'AWS/Lambda', MetricName: 'ConcurrentExecutions', Statistic: 'Maximum', Period: 60, EvaluationPeriods: 3 });
    expect(concurrency.Threshold).toBe(THRESHOLDS.defaultAccountConcurrency * THRESHOLDS.quotaShare);
    expect(concurrency.Dimensions ?? []).toEqual([]);
    const raised = Template.fromStack(buildApp(skipBundling(), { ...OPTIONS, nag: false, accountConcurrency: 5000 }).observability);
    raised.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmName: 'ai-gateway-test-lambda-account-concurrency', Threshold: 4000 });

    // API Gateway publishes no throttle metric: a filter on the access log counts THROTTLED answers.
    expect(alarmNamed('api-throttled')).toMatchObject({ Namespace: 'AiGateway/test', MetricName: 'ApiThrottled', Threshold: 1 });
    api.hasResourceProperties('AWS::Logs::MetricFilter', {
      FilterPattern: '{ $.errorType = "THROTTLED" }',
      MetricTransformations: [{ MetricNamespace: 'AiGateway/test', MetricName: 'ApiThrottled', MetricValue: '1', DefaultValue: 0 }],
    });

    const kms = alarmNamed('kms-request-rate');
    const expression = (kms.Metrics as Json[]).find((m) => m.Expression)!.Expression as string;
    expect(expression).toContain('SERVICE_QUOTA(calls)');
    const usage = (kms.Metrics as Json[]).find((m) => m.MetricStat)!.MetricStat.Metric;
    expect(usage).toMatchObject({ Namespace: 'AWS/Usage', MetricName: 'CallCount' });
    expect(dims(usage)).toEqual({ Service: 'KMS', Type: 'API', Resource: 'CryptographicOperationsSymmetric', Class: 'None' });
    expect(kms.Threshold).toBe(THRESHOLDS.quotaShare * 100);
  });
});

describe('observability stack: topic', () => {
  it('creates an encrypted, SSL-only topic that CloudWatch may publish to, with the email subscribed', () => {
    const key = stacks.observability.topicKey!;
    const keyId = logicalId(stacks.observability, key.node.defaultChild);
    obs.resourceCountIs('AWS::SNS::Topic', 1);
    obs.hasResourceProperties('AWS::SNS::Topic', { TopicName: 'ai-gateway-test-alarms', KmsMasterKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] } });
    obs.hasResourceProperties('AWS::KMS::Key', {
      EnableKeyRotation: true,
      KeyPolicy: {
        Statement: Match.arrayWith([
          Match.objectLike({ Principal: { Service: 'cloudwatch.amazonaws.com' }, Action: ['kms:Decrypt', 'kms:GenerateDataKey*'], Effect: 'Allow' }),
        ]),
      },
    });
    obs.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          Match.objectLike({ Effect: 'Allow', Principal: { Service: 'cloudwatch.amazonaws.com' }, Action: 'sns:Publish' }),
        ]),
      },
    });
    obs.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com', TopicArn: topicRef() });
    obs.hasOutput('AlarmTopicArn', { Value: topicRef() });
  });

  it('uses an existing topic when given one (no topic, no key created)', () => {
    const a = testApp();
    const arn = 'arn:aws:sns:eu-west-1:123456789012:ops-alerts';
    const stack = new ObservabilityStack(a, 'Obs', {
      stage: 'x',
      apiName: 'ai-gateway-x',
      apiStageName: 'x',
      functions: [{ name: 'gateway', functionName: 'fn-gateway', timeout: Duration.minutes(15) }],
      deadLetterQueues: { jobs: 'jobs-dlq' },
      stateMachines: { jobs: 'ai-gateway-x-jobs' },
      tables: [{ name: 'control', tableName: 'control-table', indexNames: ['gsi1'] }],
      alarmTopicArn: arn,
      accountConcurrency: 1000,
      alarmEmail: 'ops@example.com',
    });
    const t = Template.fromStack(stack);
    t.resourceCountIs('AWS::SNS::Topic', 0);
    t.resourceCountIs('AWS::KMS::Key', 0);
    t.resourceCountIs('AWS::CloudWatch::Alarm', 1 + 3 + 1 + 3 + 1 + 3 + 1);
    t.allResourcesProperties('AWS::CloudWatch::Alarm', { AlarmActions: [arn], OKActions: [arn] });
    t.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com', TopicArn: arn });
  });

  it('alarms on budget thresholds only when asked (-c budgetAlarm=true)', () => {
    const build = (budgetAlarm: boolean) =>
      Template.fromStack(
        new ObservabilityStack(testApp(), 'Obs', {
          stage: 'x',
          apiName: 'ai-gateway-x',
          apiStageName: 'x',
          functions: [],
          deadLetterQueues: {},
          stateMachines: {},
          tables: [],
          budgetAlarm,
          accountConcurrency: 1000,
        }),
      );
    build(false).resourceCountIs('AWS::CloudWatch::Alarm', 1 + 3 + 1);
    build(true).hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'ai-gateway-x-budget-threshold-crossed',
      MetricName: 'BudgetThresholdCrossed',
      Namespace: METRICS_NAMESPACE,
      Dimensions: [{ Name: 'service', Value: 'ai-gateway' }],
      Threshold: 1,
    });
    expect(resolveOptions({ budgetAlarm: 'true' }).budgetAlarm).toBe(true);
    expect(resolveOptions({}).budgetAlarm).toBeUndefined();
  });

  it('reads alarmEmail and alarmTopicArn from the context and rejects malformed ones', () => {
    expect(resolveOptions({ alarmEmail: 'ops@example.com', alarmTopicArn: 'arn:aws:sns:us-east-1:123456789012:alerts' })).toMatchObject({
      alarmEmail: 'ops@example.com',
      alarmTopicArn: 'arn:aws:sns:us-east-1:123456789012:alerts',
    });
    expect(resolveOptions({ alarmEmail: '', alarmTopicArn: ' ' })).not.toHaveProperty('alarmEmail');
    expect(() => resolveOptions({ alarmEmail: 'not-an-email' })).toThrow(/'alarmEmail'/);
    expect(() => resolveOptions({ alarmEmail: 'a@b.c,d@e.f' })).toThrow(/'alarmEmail'/);
    expect(() => resolveOptions({ alarmTopicArn: 'arn:aws:sqs:us-east-1:123456789012:q' })).toThrow(/'alarmTopicArn'/);
    expect(() => resolveOptions({ alarmTopicArn: 'arn:aws:sns:us-east-1:123456789012:alerts.fifo' })).toThrow(/'alarmTopicArn'/);
  });
});

describe('observability stack: dashboard', () => {
  /** The dashboard body with every CloudFormation token replaced by a placeholder. */
  const dashboardBody = (): Json => {
    const [dash] = Object.values(obs.findResources('AWS::CloudWatch::Dashboard'));
    const body = dash!.Properties.DashboardBody as { 'Fn::Join': [string, unknown[]] };
    return JSON.parse(body['Fn::Join'][1].map((p) => (typeof p === 'string' ? p : 'TOKEN')).join('')) as Json;
  };

  it('exists, named after the stage, with its URL as an output', () => {
    obs.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    obs.hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: 'ai-gateway-test' });
    obs.hasOutput('DashboardUrl', { Value: { 'Fn::Join': ['', Match.arrayWith([Match.stringLikeRegexp('#dashboards:name=ai-gateway-test$')])] } });
  });

  it('shows every EMF metric by route and provider through SEARCH expressions', () => {
    const text = JSON.stringify(dashboardBody());
    for (const [metric, stat] of Object.entries(EMF_METRICS)) {
      expect(text, metric).toContain(`SEARCH('{${METRICS_NAMESPACE},provider,route,service} MetricName=\\"${metric}\\"', '${stat}', 300)`);
    }
    // Requests that named no provider (admin, CRUD) have only route and service.
    expect(text).toContain(`SEARCH('{${METRICS_NAMESPACE},route,service} MetricName=\\"Requests\\"', 'Sum', 300)`);
    // The namespace is the one every function publishes to.
    for (const fn of Object.values(stacks.api.functions)) {
      const res = api.findResources('AWS::Lambda::Function')[logicalId(stacks.api, fn.function.node.defaultChild)]!;
      expect(res.Properties.Environment.Variables.POWERTOOLS_METRICS_NAMESPACE).toBe(METRICS_NAMESPACE);
    }
  });

  it('shows cost by workspace, provider and model, and budget events', () => {
    const text = JSON.stringify(dashboardBody());
    expect(text).toContain(`SEARCH('{${METRICS_NAMESPACE},model,provider,service,workspace} MetricName=\\"CostUSD\\"', 'Sum', 300)`);
    expect(text).toContain(`SEARCH('{${METRICS_NAMESPACE},budget,service,workspace} MetricName=\\"BudgetThresholdCrossed\\"', 'Sum', 300)`);
  });

  it('shows the alarms and the figures they watch', () => {
    const body = dashboardBody();
    const widgets = body.widgets as Json[];
    const alarmWidget = widgets.find((w) => w.type === 'alarm')!;
    expect(alarmWidget.properties.alarms).toHaveLength(stacks.observability.alarms.length);
    const titles = widgets.filter((w) => w.type === 'metric').map((w) => w.properties.title as string);
    for (const t of [
      'API requests and errors',
      'API 5XX rate (%)',
      'API latency (ms)',
      'Lambda errors',
      'Lambda throttles',
      'Lambda duration p99 (ms)',
      'Executions failed / timed out',
      'Dead-letter queue depth',
      'DynamoDB throttle events by table',
      'Tokens by route / provider',
      'Cache hits by route / provider',
      'Rate-limit rejections (429) by route / provider',
      'Guardrail blocks (446) by route / provider',
      'Upstream latency p99 (ms) by provider',
    ]) {
      expect(titles, t).toContain(t);
    }
    const lambdaErrors = widgets.find((w) => w.properties.title === 'Lambda errors')!;
    expect(lambdaErrors.properties.metrics).toHaveLength(Object.keys(stacks.api.functions).length + WORKERS.length);
  });
});

describe('observability stack: references and order', () => {
  it('reads names through weak references only (it holds no export of another stack)', () => {
    expect(JSON.stringify(obs.toJSON())).not.toContain('Fn::ImportValue');
  });

  it('deploys after the data, API and workflows stacks', () => {
    const deps = stacks.observability.dependencies;
    for (const s of [stacks.data, stacks.api, stacks.workflows]) expect(deps).toContain(s);
  });
});

describe('hygiene across every stack', () => {
  const all = () =>
    [
      [stacks.data, data],
      [stacks.api, api],
      [stacks.workflows, wf],
      [stacks.bootstrap, Template.fromStack(stacks.bootstrap)],
      [stacks.observability, obs],
    ] as const;

  it('traces every function and state machine with X-Ray and keeps every log group for the set retention', () => {
    let functions = 0;
    for (const [stack, t] of all()) {
      for (const fn of Object.values(t.findResources('AWS::Lambda::Function'))) {
        functions++;
        expect(fn.Properties.TracingConfig, stack.stackName).toEqual({ Mode: 'Active' });
        expect(fn.Properties.LoggingConfig.LogGroup, stack.stackName).toBeDefined();
      }
      for (const m of Object.values(t.findResources('AWS::StepFunctions::StateMachine'))) expect(m.Properties.TracingConfiguration).toEqual({ Enabled: true });
      for (const g of Object.values(t.findResources('AWS::Logs::LogGroup'))) expect(g.Properties.RetentionInDays, stack.stackName).toBe(14);
    }
    expect(functions).toBe(ENDPOINT_GROUPS.length + WORKERS.length + 1);
  });

  it('encrypts every table, queue, topic and secret', () => {
    for (const [, t] of all()) {
      for (const table of Object.values(t.findResources('AWS::DynamoDB::Table'))) expect(table.Properties.SSESpecification).toEqual({ SSEEnabled: true });
      for (const q of Object.values(t.findResources('AWS::SQS::Queue')))
        expect(q.Properties.SqsManagedSseEnabled === true || q.Properties.KmsMasterKeyId !== undefined).toBe(true);
      for (const topic of Object.values(t.findResources('AWS::SNS::Topic'))) expect(topic.Properties.KmsMasterKeyId).toBeDefined();
      // Secrets Manager always encrypts; without KmsKeyId it uses aws/secretsmanager.
      expect(Object.keys(t.findResources('AWS::SecretsManager::Secret')).length).toBeLessThanOrEqual(1);
    }
  });

  it('has no unacknowledged cdk-nag findings in any stack', () => {
    expect(synthError?.message).toBeUndefined();
  });
});
