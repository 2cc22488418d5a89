import { Aws, Duration, Tags, Token, Validations, type App } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import type { CfnQueue } from 'aws-cdk-lib/aws-sqs';
import type { CfnStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { indexesOf, TABLE_SPECS } from '../tables';
import { FALLBACK_GROUP } from '../endpoint-groups';
import { ApiStack } from './api-stack';
import { BootstrapStack } from './bootstrap-stack';
import { EdgeWafStack } from './edge-waf-stack';
import { DataStack } from './data-stack';
import { ObservabilityStack, THRESHOLDS, type MonitoredFunction } from './observability-stack';
import type { GatewayAppOptions } from './options';
import { WorkflowsStack } from './workflows-stack';

export { ApiStack } from './api-stack';
export { BootstrapStack } from './bootstrap-stack';
export { DataStack } from './data-stack';
export { ObservabilityStack } from './observability-stack';
export { WorkflowsStack } from './workflows-stack';
export {
  DEFAULT_MANAGED_INSTANCES,
  DEFAULT_OPTIONS,
  optionsFromContext,
  resolveManagedInstances,
  resolveOptions,
  type CapacityMode,
  type GatewayAppOptions,
  type ManagedInstancesOptions,
} from './options';

export interface GatewayStacks {
  data: DataStack;
  api: ApiStack;
  workflows: WorkflowsStack;
  bootstrap: BootstrapStack;
  observability: ObservabilityStack;
  /** Only with `edgeWaf`. */
  edgeWaf?: EdgeWafStack;
}

/**
 * Builds the gateway's stacks into `app`. infra/app.ts calls it with the context options;
 * tests call it with an App that skips bundling (`'aws:cdk:bundling-stacks': []`).
 * Stacks are environment-agnostic (no account/region, no lookups): synthesis is offline.
 */
export function buildApp(app: App, options: GatewayAppOptions): GatewayStacks {
  const { stage } = options;
  const prefix = `AiGateway-${stage}`;

  const data = new DataStack(app, `${prefix}-Data`, {
    stackName: `${prefix}-Data`,
    description: `AI gateway (${stage}): DynamoDB tables and the provider-credentials KMS key (retained on delete)`,
    stage,
  });
  const api = new ApiStack(app, `${prefix}-Api`, {
    stackName: `${prefix}-Api`,
    description: `AI gateway (${stage}): REST API and one response-streaming Lambda per endpoint group`,
    stage,
    memorySize: options.memorySize,
    ...(options.memorySizes ? { memorySizes: options.memorySizes } : {}),
    ...(options.reservedConcurrency ? { reservedConcurrency: options.reservedConcurrency } : {}),
    capacity: options.capacity ?? 'on-demand',
    ...(options.managedInstances ? { managedInstances: options.managedInstances } : {}),
    logRetentionDays: options.logRetentionDays,
    tables: data.tables,
    providerCredentialsKey: data.providerCredentialsKey,
    files: { bucket: data.files.bucket, key: data.files.key },
    ...(options.sso ? { sso: options.sso } : {}),
    ...(options.frontDoor ? { frontDoor: options.frontDoor } : {}),
    ...(options.wafArn ? { cdn: { webAclArn: options.wafArn } } : {}),
    ...(options.corsOrigins !== undefined ? { corsOrigins: options.corsOrigins } : {}),
  });
  // A CLOUDFRONT-scope web ACL exists in us-east-1 only: its stack is pinned there.
  const edgeWaf = options.edgeWaf
    ? new EdgeWafStack(app, `${prefix}-EdgeWaf`, {
        stackName: `${prefix}-EdgeWaf`,
        description: `AI gateway (${stage}): WAF web ACL for the CloudFront front door (us-east-1)`,
        env: { region: 'us-east-1' },
        stage,
        rateLimitPer5Minutes: options.edgeWaf.rateLimitPer5Minutes,
      })
    : undefined;

  if (options.budgetAlarm) manageBudgetAlarms(api, stage, options.alarmTopicArn);

  // State machines, their workers and queues (infra/workflows/registry.ts). It hands env
  // vars and grants to the API functions that feed or stop workflows, so the API stack
  // depends on it (never the other way: no cycle).
  const workflows = new WorkflowsStack(app, `${prefix}-Workflows`, {
    stackName: `${prefix}-Workflows`,
    description: `AI gateway (${stage}): Step Functions workflows, their worker Lambdas, queues and dead-letter queues`,
    stage,
    memorySize: options.memorySize,
    logRetentionDays: options.logRetentionDays,
    tables: data.tables,
    providerCredentialsKey: data.providerCredentialsKey,
    files: { bucket: data.files.bucket, key: data.files.key },
    apiFunctions: api.functions,
  });

  // The first admin key, created at deploy time and kept in Secrets Manager.
  const bootstrap = new BootstrapStack(app, `${prefix}-Bootstrap`, {
    stackName: `${prefix}-Bootstrap`,
    description: `AI gateway (${stage}): deploy-time bootstrap (organisation, default workspace, admin key in Secrets Manager)`,
    stage,
    logRetentionDays: options.logRetentionDays,
    tables: data.tables,
    providerCredentialsKey: data.providerCredentialsKey,
  });

  // Alarms, their SNS topic and the dashboard, over every function, queue, machine and table.
  // Fixed physical names are passed literally (no cross-stack reference at all).
  const timeoutOf = (fn: { timeout?: Duration }) => fn.timeout ?? Duration.seconds(3);
  const functions: MonitoredFunction[] = [
    ...Object.entries(api.functions).map(([name, f]) => ({ name, functionName: f.function.functionName, timeout: timeoutOf(f.function) })),
    ...Object.entries(workflows.workers).map(([name, w]) => ({
      name,
      functionName: fixedName((w.function.node.defaultChild as CfnFunction).functionName) ?? w.function.functionName,
      timeout: timeoutOf(w.function),
    })),
  ];
  const observability = new ObservabilityStack(app, `${prefix}-Observability`, {
    stackName: `${prefix}-Observability`,
    description: `AI gateway (${stage}): alarms, alarm topic and CloudWatch dashboard`,
    stage,
    ...(api.restApi
      ? { apiName: api.restApi.restApiName, apiStageName: stage }
      : {
          functionUrls: {
            functionNames: Object.values(api.functions).map((f) => f.function.functionName),
            gatewayFunctionName: api.functions[FALLBACK_GROUP]!.function.functionName,
          },
        }),
    functions,
    deadLetterQueues: Object.fromEntries(
      Object.entries(workflows.queues).map(([name, q]) => [
        name,
        required(fixedName((q.deadLetterQueue.node.defaultChild as CfnQueue).queueName), `queue ${name}`),
      ]),
    ),
    stateMachines: Object.fromEntries(
      Object.entries(workflows.stateMachines).map(([name, m]) => [
        name,
        required(fixedName((m.node.defaultChild as CfnStateMachine).stateMachineName), `state machine ${name}`),
      ]),
    ),
    tables: TABLE_SPECS.map((t) => ({ name: t.name, tableName: data.tables[t.name].tableName, indexNames: indexesOf(t).map((i) => i.name) })),
    accountConcurrency: options.accountConcurrency ?? THRESHOLDS.defaultAccountConcurrency,
    ...(options.alarmEmail ? { alarmEmail: options.alarmEmail } : {}),
    ...(options.alarmTopicArn ? { alarmTopicArn: options.alarmTopicArn } : {}),
    budgetAlarm: options.budgetAlarm === true,
  });
  // Metrics name functions, queues and machines: deploy after them, so new ones have names.
  observability.addStackDependency(api);
  observability.addStackDependency(workflows);

  Tags.of(app).add('application', 'ai-gateway');
  Tags.of(app).add('ai-gateway:stage', stage);

  if (options.nag ?? true) Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { data, api, workflows, bootstrap, observability, ...(edgeWaf ? { edgeWaf } : {}) };
}

/** A physical name given literally in the template, or undefined when CloudFormation generates it. */
function fixedName(value: string | undefined): string | undefined {
  return value !== undefined && !Token.isUnresolved(value) ? value : undefined;
}

function required(value: string | undefined, what: string): string {
  if (value === undefined) throw new Error(`The observability stack needs a fixed name for the ${what}.`);
  return value;
}

/**
 * `-c budgetAlarm=true`: the policies function keeps one CloudWatch alarm per active budget
 * (functions/policies/budget-alarms.ts), named `ai-gateway-<stage>-budget-<id>` so the alarm
 * topic accepts it, and may manage only alarms with that prefix. The topic's ARN is built
 * from its fixed name: the observability stack deploys after this one.
 */
function manageBudgetAlarms(api: ApiStack, stage: string, alarmTopicArn: string | undefined): void {
  const fn = api.functions.policies?.function;
  if (!fn) throw new Error("The option 'budgetAlarm' needs the 'policies' endpoint group.");
  const prefix = `ai-gateway-${stage}-budget-`;
  fn.addEnvironment('BUDGET_ALARM_TOPIC_ARN', alarmTopicArn ?? `arn:${Aws.PARTITION}:sns:${Aws.REGION}:${Aws.ACCOUNT_ID}:ai-gateway-${stage}-alarms`);
  fn.addEnvironment('BUDGET_ALARM_PREFIX', prefix);
  fn.addToRolePolicy(
    new PolicyStatement({
      sid: 'BudgetAlarms',
      actions: ['cloudwatch:PutMetricAlarm', 'cloudwatch:DeleteAlarms'],
      resources: [`arn:${Aws.PARTITION}:cloudwatch:${Aws.REGION}:${Aws.ACCOUNT_ID}:alarm:${prefix}*`],
    }),
  );
  Validations.of(fn.role!).acknowledge({
    id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:cloudwatch:<AWS::Region>:<AWS::AccountId>:alarm:${prefix}*]`,
    reason:
      'Budgets are created at run time, each with its own alarm: the function may put and delete only alarms whose names carry the budget-alarm prefix of this stage.',
  });
}
