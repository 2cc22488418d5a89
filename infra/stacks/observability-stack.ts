import { Arn, ArnFormat, Aws, CfnOutput, CrossStackReferences, Duration, ReferenceStrength, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  MathExpression,
  Metric,
  SearchExpression,
  TextWidget,
  TreatMissingData,
  type IMetric,
  type IWidget,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Topic, type ITopic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Construct } from 'constructs';
import { apiThrottledMetric, STAGE_THROTTLING } from './api-stack';
import { functionUrlMetrics } from './front-door';
import { pascal } from './names';

/** EMF namespace of functions/shared/telemetry/metrics.ts (POWERTOOLS_METRICS_NAMESPACE on every function). */
export const METRICS_NAMESPACE = 'AiGateway';

/**
 * The EMF metrics of functions/shared/telemetry/metrics.ts and how the dashboard aggregates
 * them. Powertools adds the `service` dimension; a request that named a provider carries
 * {service, route, provider}, one that did not (admin, CRUD) {service, route}.
 */
export const EMF_METRICS = {
  Requests: 'Sum',
  Errors: 'Sum',
  ClientErrors: 'Sum',
  Latency: 'p99',
  UpstreamLatency: 'p99',
  PromptTokens: 'Sum',
  CompletionTokens: 'Sum',
  CacheHits: 'Sum',
  RateLimitRejections: 'Sum',
  GuardrailBlocks: 'Sum',
} as const;
export type EmfMetric = keyof typeof EMF_METRICS;

/** Alarm thresholds, in one place (docs/deploy.md describes them). */
export const THRESHOLDS = {
  /** Share of API requests answered 5XX, in %, over 5 minutes, 2 of 3 periods. */
  api5xxRatePercent: 5,
  /** Fewer requests than this in a period never raise the 5XX-rate alarm (one error in two requests is no outage). */
  api5xxMinRequests: 20,
  /**
   * p99 duration as a share of the function's timeout: near it, invocations are about to be
   * killed (a stream cut off, a task retried).
   */
  durationShareOfTimeout: 0.8,
  /** Share of a quota (account concurrency, KMS request rate) at which its alarm fires. */
  quotaShare: 0.8,
  /** Lambda's default concurrent-executions quota per account and Region. */
  defaultAccountConcurrency: 1000,
} as const;

const PERIOD = Duration.minutes(5);

/** One Lambda under watch: its alarms need its timeout. */
export interface MonitoredFunction {
  /** Short name: the endpoint group or worker (`gateway`, `fine-tune-step`). */
  name: string;
  /** Physical function name (a literal where the function has a fixed name). */
  functionName: string;
  timeout: Duration;
}

export interface MonitoredTable {
  name: string;
  tableName: string;
  /** Global secondary indexes whose throttles count too (the first with the table's alarm, the others each their own). */
  indexNames: readonly string[];
}

export interface ObservabilityStackProps extends StackProps {
  stage: string;
  /**
   * The front door's metrics: the REST API's (AWS/ApiGateway by ApiName and Stage), or with
   * `functionUrls` the function URLs' (AWS/Lambda Url* by function, front-door.ts).
   */
  apiName?: string;
  apiStageName?: string;
  functionUrls?: { functionNames: readonly string[]; gatewayFunctionName: string };
  /** Endpoint-group functions, then workers. */
  functions: readonly MonitoredFunction[];
  /** Dead-letter queue names, by the name of the queue they serve. */
  deadLetterQueues: Readonly<Record<string, string>>;
  /** State machine names (fixed names, same account and region), by registry name. */
  stateMachines: Readonly<Record<string, string>>;
  tables: readonly MonitoredTable[];
  alarmEmail?: string;
  /** Use this topic instead of creating one. */
  alarmTopicArn?: string;
  /** Alarm when any budget crosses an alert threshold (the `BudgetThresholdCrossed` EMF metric). */
  budgetAlarm?: boolean;
  /** The account's Lambda concurrent-executions quota: the alarm fires at THRESHOLDS.quotaShare of it. */
  accountConcurrency: number;
}

/**
 * Alarms, the alarm topic and the dashboard (docs/architecture.md, issue «AWS deployment and
 * observability»). Every alarm notifies the topic when it fires and when it recovers:
 * - API: share of 5XX answers (math over Count and 5XXError);
 * - every function: Errors (handlers answer every request themselves, so an invocation error
 *   is a crash or a timeout), Throttles, and p99 Duration near the timeout;
 * - every dead-letter queue: any visible message;
 * - every state machine: failed, timed-out and throttled executions;
 * - every table: throttle events (reads and writes, table and every index);
 * - quotas: the account's Lambda concurrency and KMS request rate near their quotas, and
 *   requests API Gateway throttled (stage or account limit).
 * The dashboard shows those figures plus the gateway's EMF metrics by route and provider.
 *
 * Alarms and widgets only need names. Resources with fixed names (workers, queues, state
 * machines, the API) are named literally; generated names (endpoint-group functions, tables)
 * are read through weak references (Fn::GetStackOutput), so monitoring never holds an export
 * that would block replacing a function.
 */
export class ObservabilityStack extends Stack {
  readonly topic: ITopic;
  readonly alarms: readonly Alarm[];
  readonly dashboard: Dashboard;
  /** The KMS key of the created topic (none when an existing topic is used). */
  readonly topicKey?: Key;

  constructor(scope: Construct, id: string, props: ObservabilityStackProps) {
    super(scope, id, props);
    CrossStackReferences.of(this).consume(ReferenceStrength.WEAK);
    const prefix = `ai-gateway-${props.stage}`;
    const metric = (namespace: string, metricName: string, dimensionsMap: Record<string, string>, statistic: string, label?: string, period = PERIOD) =>
      new Metric({ namespace, metricName, dimensionsMap, statistic, period, ...(label ? { label } : {}) });
    const apiMetric = (metricName: string, statistic: string, label?: string) =>
      metric('AWS/ApiGateway', metricName, { ApiName: props.apiName ?? '', Stage: props.apiStageName ?? '' }, statistic, label);
    const lambdaMetric = (f: MonitoredFunction, metricName: string, statistic: string, label?: string) =>
      metric('AWS/Lambda', metricName, { FunctionName: f.functionName }, statistic, label);
    const dlqDepth = (queueName: string, label?: string) =>
      metric('AWS/SQS', 'ApproximateNumberOfMessagesVisible', { QueueName: queueName }, 'Maximum', label, Duration.minutes(1));
    const machineArn = (name: string) =>
      Arn.format({ service: 'states', resource: 'stateMachine', resourceName: name, arnFormat: ArnFormat.COLON_RESOURCE_NAME }, this);
    const executions = (name: string, metricName: string, label?: string) =>
      metric('AWS/States', metricName, { StateMachineArn: machineArn(props.stateMachines[name]!) }, 'Sum', label);

    // ---- topic ------------------------------------------------------------------------------
    // Only this stack's alarms (named `${prefix}-...`) may use the topic and its key.
    const alarmArns = `arn:${Aws.PARTITION}:cloudwatch:${Aws.REGION}:${Aws.ACCOUNT_ID}:alarm:${prefix}-*`;
    if (props.alarmTopicArn) {
      this.topic = Topic.fromTopicArn(this, 'AlarmTopic', props.alarmTopicArn);
    } else {
      // CloudWatch cannot use the AWS-managed SNS key (aws/sns), so the topic gets its own key
      // whose policy lets CloudWatch encrypt the notifications it publishes.
      this.topicKey = new Key(this, 'AlarmTopicKey', {
        description: `AI gateway (${props.stage}): encrypts the alarm topic`,
        alias: `alias/ai-gateway/${props.stage}/alarms`,
        enableKeyRotation: true,
        // It protects notifications in flight only; nothing stored needs it after a teardown.
        removalPolicy: RemovalPolicy.DESTROY,
        pendingWindow: Duration.days(7),
      });
      this.topicKey.addToResourcePolicy(
        new PolicyStatement({
          sid: 'CloudWatchAlarmsPublish',
          principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
          actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
          resources: ['*'],
          conditions: { StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID }, ArnLike: { 'aws:SourceArn': alarmArns } },
        }),
      );
      const topic = new Topic(this, 'AlarmTopic', {
        topicName: `${prefix}-alarms`,
        displayName: `AI gateway (${props.stage}) alarms`,
        masterKey: this.topicKey,
        enforceSSL: true,
      });
      // enforceSSL writes a topic policy, which replaces SNS's default one: allow CloudWatch
      // alarms of this account explicitly.
      topic.addToResourcePolicy(
        new PolicyStatement({
          sid: 'CloudWatchAlarmsPublish',
          principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
          actions: ['sns:Publish'],
          resources: [topic.topicArn],
          conditions: {
            StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID },
            ArnLike: { 'aws:SourceArn': alarmArns },
          },
        }),
      );
      this.topic = topic;
    }
    if (props.alarmEmail) this.topic.addSubscription(new EmailSubscription(props.alarmEmail));
    const action = new SnsAction(this.topic);

    const alarms: Alarm[] = [];
    const alarm = (
      id: string,
      name: string,
      description: string,
      metric: IMetric,
      threshold: number,
      options: { evaluationPeriods?: number; datapointsToAlarm?: number } = {},
    ): Alarm => {
      const a = new Alarm(this, id, {
        alarmName: `${prefix}-${name}`,
        alarmDescription: `AI gateway (${props.stage}): ${description}`,
        metric,
        threshold,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: options.evaluationPeriods ?? 1,
        datapointsToAlarm: options.datapointsToAlarm ?? options.evaluationPeriods ?? 1,
        // No data means no traffic, no messages, no executions: not a problem.
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      a.addAlarmAction(action);
      a.addOkAction(action);
      alarms.push(a);
      return a;
    };

    // ---- API --------------------------------------------------------------------------------
    const urls = props.functionUrls ? functionUrlMetrics(props.functionUrls.functionNames, props.functionUrls.gatewayFunctionName, PERIOD) : undefined;
    const requests = urls?.requests ?? apiMetric('Count', 'Sum');
    const serverErrors = urls?.serverErrors ?? apiMetric('5XXError', 'Sum');
    const clientErrors = urls?.clientErrors ?? apiMetric('4XXError', 'Sum');
    const api5xxRate = new MathExpression({
      expression: `IF(requests >= ${THRESHOLDS.api5xxMinRequests}, 100 * errors / requests, 0)`,
      usingMetrics: urls ? { requests: urls.alarm.requests, errors: urls.alarm.serverErrors } : { requests, errors: serverErrors },
      label: urls ? 'gateway URL 5XX rate (%)' : 'API 5XX rate (%)',
      period: PERIOD,
    });
    const api5xxAlarm = alarm(
      'Api5xxRateAlarm',
      'api-5xx-rate',
      `at least ${THRESHOLDS.api5xxRatePercent}% of API requests answered 5XX in 2 of 3 five-minute periods (periods with fewer than ${THRESHOLDS.api5xxMinRequests} requests never count)`,
      api5xxRate,
      THRESHOLDS.api5xxRatePercent,
      { evaluationPeriods: 3, datapointsToAlarm: 2 },
    );

    // ---- functions --------------------------------------------------------------------------
    for (const f of props.functions) {
      const id = pascal(f.name);
      alarm(
        `${id}ErrorsAlarm`,
        `lambda-errors-${f.name}`,
        `the ${f.name} function failed an invocation (crash or timeout)`,
        lambdaMetric(f, 'Errors', 'Sum'),
        1,
      );
      alarm(
        `${id}ThrottlesAlarm`,
        `lambda-throttles-${f.name}`,
        `the ${f.name} function was throttled (concurrency limit)`,
        lambdaMetric(f, 'Throttles', 'Sum'),
        1,
      );
      const limitMs = Math.round(f.timeout.toMilliseconds() * THRESHOLDS.durationShareOfTimeout);
      alarm(
        `${id}DurationAlarm`,
        `lambda-duration-p99-${f.name}`,
        `p99 duration of the ${f.name} function reached ${THRESHOLDS.durationShareOfTimeout * 100}% of its ${f.timeout.toSeconds()} s timeout, 2 periods in a row`,
        lambdaMetric(f, 'Duration', 'p99'),
        limitMs,
        { evaluationPeriods: 2 },
      );
    }

    // ---- budgets ------------------------------------------------------------------------------
    if (props.budgetAlarm) {
      alarm(
        'BudgetThresholdAlarm',
        'budget-threshold-crossed',
        'a budget crossed one of its alert thresholds or its limit (the log line `budget threshold crossed` / `budget exhausted` names it; the metric has a per-budget dimension too)',
        metric(METRICS_NAMESPACE, 'BudgetThresholdCrossed', { service: 'ai-gateway' }, 'Sum'),
        1,
      );
    }

    // ---- request-log writes (functions/gateway/log-store.ts) -----------------------------------
    alarm(
      'LogWriteDeadLetteredAlarm',
      'log-write-dead-lettered',
      'request-log records went to the log-records queue because DynamoDB kept throttling their write (its consumer writes them later; see the logs table throttle alarms, raise REQUEST_LOG_SHARDS or the table throughput)',
      metric(METRICS_NAMESPACE, 'LogWriteDeadLettered', { service: 'ai-gateway' }, 'Sum'),
      1,
    );

    // ---- dead-letter queues -----------------------------------------------------------------
    for (const [name, queueName] of Object.entries(props.deadLetterQueues)) {
      alarm(
        `${pascal(name)}DeadLetterAlarm`,
        `dlq-${name}`,
        `messages of the ${name} queue reached its dead-letter queue (redrive them once the cause is fixed)`,
        dlqDepth(queueName),
        1,
      );
    }

    // ---- state machines ---------------------------------------------------------------------
    for (const name of Object.keys(props.stateMachines)) {
      alarm(`${pascal(name)}FailedAlarm`, `sfn-failed-${name}`, `${name} executions failed`, executions(name, 'ExecutionsFailed'), 1);
      alarm(`${pascal(name)}TimedOutAlarm`, `sfn-timed-out-${name}`, `${name} executions timed out`, executions(name, 'ExecutionsTimedOut'), 1);
      alarm(
        `${pascal(name)}ThrottledAlarm`,
        `sfn-throttled-${name}`,
        `${name} executions were throttled (StartExecution or state-transition quota)`,
        executions(name, 'ExecutionThrottled'),
        1,
      );
    }

    // ---- quotas -----------------------------------------------------------------------------
    const concurrencyLimit = Math.floor(props.accountConcurrency * THRESHOLDS.quotaShare);
    alarm(
      'AccountConcurrencyAlarm',
      'lambda-account-concurrency',
      `the account's Lambda concurrent executions reached ${THRESHOLDS.quotaShare * 100}% of its ${props.accountConcurrency} quota (context accountConcurrency) in 3 one-minute periods: every function of the account shares it; raise the quota (Service Quotas, L-B99A9384) before requests are throttled`,
      metric('AWS/Lambda', 'ConcurrentExecutions', {}, 'Maximum', undefined, Duration.minutes(1)),
      concurrencyLimit,
      { evaluationPeriods: 3 },
    );
    const throttled = apiThrottledMetric(props.stage);
    // Function URLs have no stage throttle: a 429 there is a Lambda throttle, which lambda-throttles-* alarm on.
    if (!urls) {
      alarm(
        'ApiThrottledAlarm',
        'api-throttled',
        `API Gateway throttled requests (429 before any function ran): the stage's ${STAGE_THROTTLING.rateLimit} req/s (burst ${STAGE_THROTTLING.burstLimit}) or the account's Regional limit binds`,
        metric(throttled.namespace, throttled.metricName, {}, 'Sum'),
        1,
      );
    }
    const kmsCalls = metric(
      'AWS/Usage',
      'CallCount',
      { Service: 'KMS', Type: 'API', Resource: 'CryptographicOperationsSymmetric', Class: 'None' },
      'Sum',
      undefined,
      Duration.minutes(1),
    );
    alarm(
      'KmsQuotaAlarm',
      'kms-request-rate',
      `symmetric KMS requests (provider credentials, files, logs) reached ${THRESHOLDS.quotaShare * 100}% of the account's per-second quota in a minute`,
      new MathExpression({
        expression: '100 * (calls / 60) / SERVICE_QUOTA(calls)',
        usingMetrics: { calls: kmsCalls },
        label: 'KMS symmetric requests (% of quota)',
        period: Duration.minutes(1),
      }),
      THRESHOLDS.quotaShare * 100,
    );

    // ---- tables -----------------------------------------------------------------------------
    const throttleExpressions: Record<string, MathExpression> = {};
    for (const { name, tableName, indexNames } of props.tables) {
      const m = (metricName: string, index?: string) =>
        metric('AWS/DynamoDB', metricName, { TableName: tableName, ...(index ? { GlobalSecondaryIndexName: index } : {}) }, 'Sum');
      // Ids are unique across tables: the dashboard graphs all tables' expressions together.
      const key = name.replace(/[^a-zA-Z0-9]/g, '').toLowerCase();
      const throttles = (index?: string): Record<string, IMetric> => {
        const id = `${key}${index ? pascal(index).replace(/[^a-zA-Z0-9]/g, '') : ''}`;
        return { [`${id}Reads`]: m('ReadThrottleEvents', index), [`${id}Writes`]: m('WriteThrottleEvents', index) };
      };
      const sum = (usingMetrics: Record<string, IMetric>, label: string) =>
        new MathExpression({
          expression: Object.keys(usingMetrics)
            .map((k) => `FILL(${k}, 0)`)
            .join(' + '),
          usingMetrics,
          label,
          period: PERIOD,
        });
      // An alarm's expression may use at most 10 metrics: the table and its first index
      // share one alarm, every further index (the request log's meta_* indexes) has its own.
      const [first, ...others] = indexNames;
      const tableMetrics = { ...throttles(), ...(first ? throttles(first) : {}) };
      throttleExpressions[name] = sum({ ...tableMetrics, ...Object.assign({}, ...others.map((i) => throttles(i))) }, name);
      alarm(
        `${pascal(name)}TableThrottlesAlarm`,
        `dynamodb-throttles-${name}`,
        `requests to the ${name} table were throttled (read or write, table${first ? ` or index ${first}` : ''})`,
        sum(tableMetrics, name),
        1,
      );
      for (const index of others) {
        alarm(
          `${pascal(name)}${pascal(index)}ThrottlesAlarm`,
          `dynamodb-throttles-${name}-${index}`,
          `requests to the ${index} index of the ${name} table were throttled (a hot index value, e.g. one metadata value on most requests)`,
          sum(throttles(index), `${name} ${index}`),
          1,
        );
      }
    }
    this.alarms = alarms;

    // ---- dashboard --------------------------------------------------------------------------
    const search = (metric: EmfMetric, dims: string, label: string) =>
      new SearchExpression({
        expression: `SEARCH('{${METRICS_NAMESPACE},${dims}} MetricName="${metric}"', '${EMF_METRICS[metric]}', ${PERIOD.toSeconds()})`,
        label,
        period: PERIOD,
      });
    /** Per route and provider, plus per route for requests that named no provider. */
    const byRouteAndProvider = (metric: EmfMetric) => [search(metric, 'provider,route,service', ''), search(metric, 'route,service', '')];
    const byProvider = (metric: EmfMetric) => [search(metric, 'provider,route,service', '')];
    const graph = (title: string, left: IMetric[], extra: Partial<ConstructorParameters<typeof GraphWidget>[0]> = {}) =>
      new GraphWidget({ title, left, width: 8, height: 6, period: PERIOD, ...extra });
    const fnMetric = (pick: (f: MonitoredFunction) => IMetric) => props.functions.map(pick);

    this.dashboard = new Dashboard(this, 'Dashboard', {
      dashboardName: prefix,
      defaultInterval: Duration.hours(3),
    });
    const rows: IWidget[][] = [
      [
        new TextWidget({
          markdown: [
            `# AI gateway (${props.stage})`,
            `Alarms notify the SNS topic \`${props.alarmTopicArn ?? `${prefix}-alarms`}\`. Gateway metrics are EMF, namespace \`${METRICS_NAMESPACE}\`, by route and provider;`,
            "logs are JSON in each function's log group (CloudWatch Logs Insights: `fields @timestamp, level, message, trace_id | sort @timestamp desc`).",
          ].join('\n'),
          width: 24,
          height: 3,
        }),
      ],
      [new AlarmStatusWidget({ title: 'Alarms', alarms, width: 24, height: 6 })],
      [
        graph('API requests and errors', [requests.with({ label: 'requests' }), clientErrors.with({ label: '4XX' }), serverErrors.with({ label: '5XX' })]),
        graph('API 5XX rate (%)', [api5xxRate], { leftAnnotations: [{ value: THRESHOLDS.api5xxRatePercent, label: api5xxAlarm.node.id, color: '#d62728' }] }),
        graph(
          'API latency (ms)',
          urls?.latency ?? [
            apiMetric('Latency', 'p50', 'latency p50'),
            apiMetric('Latency', 'p99', 'latency p99'),
            apiMetric('IntegrationLatency', 'p99', 'integration p99'),
          ],
        ),
      ],
      [
        graph('Requests by route / provider', byRouteAndProvider('Requests')),
        graph('Errors (5xx answers) by route / provider', byRouteAndProvider('Errors')),
        graph('Client errors (4xx) by route / provider', byRouteAndProvider('ClientErrors')),
      ],
      [
        graph('Latency p99 (ms) by route / provider', byRouteAndProvider('Latency')),
        graph('Upstream latency p99 (ms) by provider', byProvider('UpstreamLatency')),
        graph('Tokens by route / provider', [
          search('PromptTokens', 'provider,route,service', 'prompt'),
          search('CompletionTokens', 'provider,route,service', 'completion'),
        ]),
      ],
      [
        graph('Cost (USD) by workspace / provider / model', [
          new SearchExpression({
            expression: `SEARCH('{${METRICS_NAMESPACE},model,provider,service,workspace} MetricName="CostUSD"', 'Sum', ${PERIOD.toSeconds()})`,
            label: '',
            period: PERIOD,
          }),
        ]),
        graph('Budget thresholds crossed by workspace / budget', [
          new SearchExpression({
            expression: `SEARCH('{${METRICS_NAMESPACE},budget,service,workspace} MetricName="BudgetThresholdCrossed"', 'Sum', ${PERIOD.toSeconds()})`,
            label: '',
            period: PERIOD,
          }),
        ]),
      ],
      [
        graph('Cache hits by route / provider', byRouteAndProvider('CacheHits')),
        graph('Rate-limit rejections (429) by route / provider', byRouteAndProvider('RateLimitRejections')),
        graph('Guardrail blocks (446) by route / provider', byRouteAndProvider('GuardrailBlocks')),
      ],
      [
        graph(
          'Lambda errors',
          fnMetric((f) => lambdaMetric(f, 'Errors', 'Sum', f.name)),
        ),
        graph(
          'Lambda throttles',
          fnMetric((f) => lambdaMetric(f, 'Throttles', 'Sum', f.name)),
        ),
        graph(
          'Lambda duration p99 (ms)',
          fnMetric((f) => lambdaMetric(f, 'Duration', 'p99', f.name)),
        ),
      ],
      [
        graph(
          'Executions failed / timed out',
          Object.keys(props.stateMachines).flatMap((name) => [
            executions(name, 'ExecutionsFailed', `${name} failed`),
            executions(name, 'ExecutionsTimedOut', `${name} timed out`),
          ]),
        ),
        graph(
          'Executions started / succeeded',
          Object.keys(props.stateMachines).flatMap((name) => [
            executions(name, 'ExecutionsStarted', `${name} started`),
            executions(name, 'ExecutionsSucceeded', `${name} succeeded`),
          ]),
        ),
        graph(
          'Dead-letter queue depth',
          Object.entries(props.deadLetterQueues).map(([name, queueName]) => dlqDepth(queueName, name)),
        ),
      ],
      [graph('DynamoDB throttle events by table', Object.values(throttleExpressions), { width: 24 })],
    ];
    for (const row of rows) this.dashboard.addWidgets(...row);

    new CfnOutput(this, 'DashboardUrl', {
      value: `https://${Aws.REGION}.console.aws.amazon.com/cloudwatch/home?region=${Aws.REGION}#dashboards:name=${prefix}`,
      description: 'CloudWatch dashboard of the gateway',
    });
    new CfnOutput(this, 'AlarmsUrl', {
      value: `https://${Aws.REGION}.console.aws.amazon.com/cloudwatch/home?region=${Aws.REGION}#alarmsV2:?search=${prefix}-`,
      description: `CloudWatch alarms of the gateway (names start with ${prefix}-)`,
    });
    new CfnOutput(this, 'AlarmTopicArn', { value: this.topic.topicArn, description: 'SNS topic the alarms notify' });
  }
}
