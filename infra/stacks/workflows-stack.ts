import { resolve } from 'node:path';
import { Arn, ArnFormat, CfnOutput, CrossStackReferences, Duration, ReferenceStrength, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import { Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement, Role, ServicePrincipal, type IRole } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { Architecture, LoggingFormat, Tracing, type Function as LambdaFn } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { DeduplicationScope, FifoThroughputLimit, Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { DefinitionBody, LogLevel, StateMachine, StateMachineType } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct, type IConstruct } from 'constructs';
import { GSI1, type TableName } from '../../functions/shared/tables';
import { PRODUCTION_BUNDLING } from '../bundling';
import { TABLE_SPECS } from '../tables';
import { validateDefinition, workerArnKey } from '../workflows/asl';
import {
  deadLetterQueueName,
  QUEUES,
  queueName,
  STATE_MACHINES,
  stateMachineName,
  taskWorkersOf,
  validateRegistry,
  WORKERS,
  type Principal,
  type QueueSpec,
  type StateMachineSpec,
  type WorkerSpec,
} from '../workflows/registry';
import { DYNAMODB_READ_ACTIONS, DYNAMODB_WRITE_ACTIONS, KMS_ACTIONS, workerAccessFor } from './access';
import { LAMBDA_RUNTIME, REPO_ROOT } from './endpoint-function';
import { acknowledge } from './nag';
import { pascal } from './names';

/** A function of another stack that a workflow hands permissions and settings to. */
export interface WorkflowPrincipal {
  function: LambdaFn;
  role: IRole;
}

export interface WorkflowsStackProps extends StackProps {
  stage: string;
  memorySize: number;
  logRetentionDays: RetentionDays;
  tables: Readonly<Record<TableName, Table>>;
  providerCredentialsKey: IKey;
  /**
   * The API stack's endpoint-group functions (`api:<group>` principals of the registry):
   * they receive the env vars and the grants their role in a workflow needs (send to a
   * queue, stop an execution, answer a task token). The references point from the API
   * stack to this one, so this stack deploys first.
   */
  apiFunctions: Readonly<Record<string, WorkflowPrincipal>>;
  /** Default: infra/workflows/registry.ts. */
  machines?: readonly StateMachineSpec[];
  queues?: readonly QueueSpec[];
  workers?: readonly WorkerSpec[];
}

/** cdk-nag acknowledgements specific to this stack, each with its reason. */
const REASONS = {
  stateMachineWildcards:
    'Step Functions logging and X-Ray tracing need logs:CreateLogDelivery, logs:GetLogDelivery, logs:UpdateLogDelivery, logs:DeleteLogDelivery, logs:ListLogDeliveries, logs:PutResourcePolicy, logs:DescribeResourcePolicies, logs:DescribeLogGroups and xray:PutTraceSegments/PutTelemetryRecords/GetSamplingRules/GetSamplingTargets, which support no resource-level permissions (IAM requires Resource "*"); the Lambda invoke statements name exact function ARNs.',
  executionWildcard:
    'Executions are created at run time, one per job or run (execution name = its id), so their ARNs are only known as "execution:<state machine name>:*"; the statement is limited to that one state machine and to DescribeExecution / StopExecution.',
} as const;

const ack = (construct: IConstruct, id: string, reason: string) => Validations.of(construct).acknowledge({ id, reason });

/**
 * Workflows (DESIGN.md §5, aws-stack-notes §5 and §7): for every entry of
 * infra/workflows/registry.ts, a Standard state machine built from the shared ASL (the same
 * definition the local runtime executes) with explicit task timeouts, ALL-level logging and
 * X-Ray tracing; its task workers as their own Lambdas (never the functions that start,
 * stop or answer it: a task worker that referenced its machine would be a dependency
 * cycle); queues with dead-letter queues feeding consumer Lambdas through event source
 * mappings with partial batch failures; and an EventBridge rule that sends executions that
 * end FAILED / TIMED_OUT / ABORTED to the machine's finalizer.
 */
export class WorkflowsStack extends Stack {
  readonly workers: Readonly<Record<string, WorkerFunction>>;
  readonly stateMachines: Readonly<Record<string, StateMachine>>;
  readonly queues: Readonly<Record<string, { queue: Queue; deadLetterQueue: Queue }>>;

  constructor(scope: Construct, id: string, props: WorkflowsStackProps) {
    super(scope, id, props);
    CrossStackReferences.of(this).consume(ReferenceStrength.STRONG);
    const machineSpecs = props.machines ?? STATE_MACHINES;
    const queueSpecs = props.queues ?? QUEUES;
    const workerSpecs = props.workers ?? WORKERS;
    if (!props.machines && !props.queues && !props.workers) validateRegistry();

    // ---- workers ------------------------------------------------------------------------
    const workers: Record<string, WorkerFunction> = {};
    for (const spec of workerSpecs) {
      workers[spec.name] = new WorkerFunction(this, `${pascal(spec.name)}Worker`, {
        spec,
        stage: props.stage,
        memorySize: Math.min(props.memorySize, 1024),
        logRetentionDays: props.logRetentionDays,
        tables: props.tables,
        providerCredentialsKey: props.providerCredentialsKey,
      });
    }
    this.workers = workers;

    const principal = (p: Principal): WorkflowPrincipal => {
      const [kind, name] = [p.slice(0, p.indexOf(':')), p.slice(p.indexOf(':') + 1)];
      const found = kind === 'api' ? props.apiFunctions[name] : workers[name] && { function: workers[name].function, role: workers[name].role };
      if (!found) throw new Error(`Workflow principal ${p} does not exist.`);
      return found;
    };

    // ---- state machines -----------------------------------------------------------------
    const machines: Record<string, StateMachine> = {};
    for (const spec of machineSpecs) {
      const definition = spec.definition();
      validateDefinition(definition);
      const id = pascal(spec.name);
      const tasks = taskWorkersOf(spec).map((w) => workers[w]!);
      const logGroup = new LogGroup(this, `${id}StateMachineLogs`, { retention: props.logRetentionDays });
      const role = new Role(this, `${id}StateMachineRole`, {
        assumedBy: new ServicePrincipal('states.amazonaws.com'),
        description: `AI gateway (${props.stage}) ${spec.name} state machine`,
      });
      // The definition invokes the unqualified function ARNs: exactly those, no versions.
      role.addToPrincipalPolicy(
        new PolicyStatement({ sid: 'InvokeTaskWorkers', actions: ['lambda:InvokeFunction'], resources: tasks.map((t) => t.function.functionArn) }),
      );
      const machine = new StateMachine(this, `${id}StateMachine`, {
        stateMachineName: stateMachineName(props.stage, spec.name),
        stateMachineType: StateMachineType.STANDARD,
        comment: `AI gateway (${props.stage}): ${spec.description}`,
        definitionBody: DefinitionBody.fromString(JSON.stringify(definition)),
        definitionSubstitutions: Object.fromEntries(tasks.map((t) => [workerArnKey(t.spec.name), t.function.functionArn])),
        role,
        logs: { destination: logGroup, level: LogLevel.ALL, includeExecutionData: false },
        tracingEnabled: true,
      });
      ack(role, 'AwsSolutions-IAM5[Resource::*]', REASONS.stateMachineWildcards);
      machines[spec.name] = machine;

      const executions = Arn.format(
        { service: 'states', resource: 'execution', resourceName: `${stateMachineName(props.stage, spec.name)}:*`, arnFormat: ArnFormat.COLON_RESOURCE_NAME },
        this,
      );
      const grant = (who: Principal, sid: string, actions: string[], resources: string[]) => {
        const p = principal(who);
        p.role.addToPrincipalPolicy(new PolicyStatement({ sid: `${sid}${id}`, actions, resources }));
        p.function.addEnvironment(spec.envVar, machine.stateMachineArn);
        if (resources.includes(executions)) ack(p.role, `AwsSolutions-IAM5[Resource::${nagResource(executions, this)}]`, REASONS.executionWildcard);
      };
      for (const who of spec.starters) grant(who, 'StartExecution', ['states:StartExecution'], [machine.stateMachineArn]);
      for (const who of spec.stoppers) grant(who, 'StopExecution', ['states:DescribeExecution', 'states:StopExecution'], [executions]);
      for (const who of spec.taskResponders) {
        grant(who, 'TaskResponse', ['states:SendTaskSuccess', 'states:SendTaskFailure', 'states:SendTaskHeartbeat'], [machine.stateMachineArn]);
      }

      if (spec.finalizer) {
        new Rule(this, `${id}ExecutionEnded`, {
          description: `AI gateway (${props.stage}): ${spec.name} executions that end without succeeding go to ${spec.finalizer}`,
          eventPattern: {
            source: ['aws.states'],
            detailType: ['Step Functions Execution Status Change'],
            detail: { stateMachineArn: [machine.stateMachineArn], status: ['FAILED', 'TIMED_OUT', 'ABORTED'] },
          },
          targets: [new LambdaFunction(workers[spec.finalizer]!.function, { retryAttempts: 8, maxEventAge: Duration.hours(6) })],
        });
      }
      new CfnOutput(this, `${id}StateMachineArn`, { value: machine.stateMachineArn, description: `${spec.envVar}: ${spec.description}` });
    }
    this.stateMachines = machines;

    // ---- queues -------------------------------------------------------------------------
    const queues: Record<string, { queue: Queue; deadLetterQueue: Queue }> = {};
    for (const spec of queueSpecs) {
      const id = pascal(spec.name);
      const fifo = spec.fifo
        ? { fifo: true, contentBasedDeduplication: false, deduplicationScope: DeduplicationScope.MESSAGE_GROUP, fifoThroughputLimit: FifoThroughputLimit.PER_MESSAGE_GROUP_ID }
        : {};
      const deadLetterQueue = new Queue(this, `${id}DeadLetterQueue`, {
        queueName: deadLetterQueueName(props.stage, spec),
        ...(spec.fifo ? { fifo: true } : {}),
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        retentionPeriod: Duration.days(14),
      });
      const queue = new Queue(this, `${id}Queue`, {
        queueName: queueName(props.stage, spec),
        ...fifo,
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        visibilityTimeout: Duration.seconds(spec.visibilityTimeoutSeconds),
        deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: spec.maxReceiveCount },
      });
      workers[spec.consumer]!.function.addEventSource(new SqsEventSource(queue, { batchSize: spec.batchSize, reportBatchItemFailures: true }));
      for (const who of spec.producers) {
        const p = principal(who);
        p.role.addToPrincipalPolicy(new PolicyStatement({ sid: `SendTo${id}`, actions: ['sqs:SendMessage'], resources: [queue.queueArn] }));
        p.function.addEnvironment(spec.envVar, queue.queueUrl);
      }
      new CfnOutput(this, `${id}QueueUrl`, { value: queue.queueUrl, description: `${spec.envVar}; dead letters: ${deadLetterQueueName(props.stage, spec)}` });
      queues[spec.name] = { queue, deadLetterQueue };
    }
    this.queues = queues;
  }
}

/** How cdk-nag spells a resource in a finding id: pseudo parameters as `<AWS::...>`. */
function nagResource(arn: string, stack: Stack): string {
  const resolved = stack.resolve(arn) as unknown;
  const parts = (resolved as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join']?.[1] ?? [resolved];
  return parts.map((p) => (typeof p === 'string' ? p : `<${String((p as { Ref?: string }).Ref)}>`)).join('');
}

/** What a WorkerFunction needs of a worker: registry workers and the bootstrap stack's custom resource. */
export type WorkerFunctionSpec = Pick<WorkerSpec, 'name' | 'entry' | 'description' | 'timeoutSeconds'>;

export interface WorkerFunctionProps {
  spec: WorkerFunctionSpec;
  stage: string;
  memorySize: number;
  logRetentionDays: RetentionDays;
  tables: Readonly<Record<TableName, Table>>;
  providerCredentialsKey: IKey;
}

/**
 * One workflow worker (task, queue consumer or finalizer): the production bundle of its
 * entry, its own log group and role with the table and key grants of WORKER_ACCESS.
 */
export class WorkerFunction extends Construct {
  readonly spec: WorkerFunctionSpec;
  readonly function: NodejsFunction;
  readonly role: Role;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: WorkerFunctionProps) {
    super(scope, id);
    const { spec } = props;
    this.spec = spec;
    const access = workerAccessFor(spec.name);
    this.logGroup = new LogGroup(this, 'LogGroup', { retention: props.logRetentionDays });
    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `AI gateway (${props.stage}) ${spec.name} worker`,
    });
    this.logGroup.grantWrite(this.role);
    for (const [name, mode] of Object.entries(access.tables) as Array<[TableName, 'read' | 'readWrite']>) {
      const table = props.tables[name];
      const tableSpec = TABLE_SPECS.find((s) => s.name === name)!;
      this.role.addToPrincipalPolicy(
        new PolicyStatement({
          sid: `${mode === 'read' ? 'Read' : 'ReadWrite'}${pascal(name)}Table`,
          actions: [...DYNAMODB_READ_ACTIONS, ...(mode === 'readWrite' ? DYNAMODB_WRITE_ACTIONS : [])],
          resources: [table.tableArn, ...(tableSpec.gsi1 ? [`${table.tableArn}/index/${GSI1}`] : [])],
        }),
      );
    }
    const kmsActions = KMS_ACTIONS[access.providerCredentials];
    if (kmsActions.length > 0) {
      this.role.addToPrincipalPolicy(new PolicyStatement({ sid: 'ProviderCredentialsKey', actions: [...kmsActions], resources: [props.providerCredentialsKey.keyArn] }));
    }

    this.function = new NodejsFunction(this, 'Function', {
      functionName: `ai-gateway-${props.stage}-${spec.name}`,
      description: `AI gateway (${props.stage}): ${spec.description}`,
      entry: resolve(REPO_ROOT, spec.entry),
      handler: 'handler',
      projectRoot: REPO_ROOT,
      depsLockFilePath: resolve(REPO_ROOT, 'package-lock.json'),
      runtime: LAMBDA_RUNTIME,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize,
      timeout: Duration.seconds(spec.timeoutSeconds),
      role: this.role,
      logGroup: this.logGroup,
      loggingFormat: LoggingFormat.JSON,
      tracing: Tracing.ACTIVE,
      environment: {
        ...Object.fromEntries(TABLE_SPECS.map((t) => [t.envVar, props.tables[t.name].tableName])),
        PROVIDER_CREDENTIALS_KEY_ID: props.providerCredentialsKey.keyArn,
        POWERTOOLS_SERVICE_NAME: 'ai-gateway',
        POWERTOOLS_METRICS_NAMESPACE: 'AiGateway',
        NODE_OPTIONS: '--enable-source-maps',
      },
      bundling: PRODUCTION_BUNDLING,
    });
    acknowledge(this.function, 'AwsSolutions-L1');
    acknowledge(this.role, 'AwsSolutions-IAM5[Resource::*]');
  }
}
