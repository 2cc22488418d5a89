import { Arn, ArnFormat, CfnOutput, CrossStackReferences, Duration, ReferenceStrength, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement, Role, ServicePrincipal, type IRole } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { Function as LambdaFn } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { DeduplicationScope, FifoThroughputLimit, Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { DefinitionBody, LogLevel, StateMachine, StateMachineType } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct, type IConstruct } from 'constructs';
import type { TableName } from '../../functions/shared/tables';
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
import { workerAccessFor } from './access';
import { grantFiles } from './api-stack';
import { createGatewayFunction } from './gateway-function';
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
  /** The Files API's bucket and its key (data stack), for the workers whose access names it (batch-run). */
  files?: { bucket: IBucket; key: IKey };
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
 * Workflows: for every entry of
 * infra/workflows/registry.ts, a Standard state machine built from the shared ASL (the same
 * definition the local runtime executes) with explicit task timeouts, ALL-level logging and
 * X-Ray tracing; its task workers as their own Lambdas (never the functions that start,
 * stop or answer it: a task worker that referenced its machine would be a dependency
 * cycle); queues with dead-letter queues feeding consumer Lambdas through event source
 * mappings with partial batch failures; an EventBridge rule that sends executions that
 * end FAILED / TIMED_OUT / ABORTED to the machine's finalizer; and a schedule rule per
 * `scheduled` worker (the run reconciler).
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
      if (workerAccessFor(spec.name).filesBucket) {
        if (!props.files) throw new Error(`Worker ${spec.name} needs the files bucket: pass \`files\` to the workflows stack.`);
        grantFiles(workers[spec.name]!, props.files, props.stage);
      }
    }
    this.workers = workers;
    for (const spec of workerSpecs) {
      if (spec.kind !== 'scheduled' || !spec.scheduleMinutes) continue;
      new Rule(this, `${pascal(spec.name)}Schedule`, {
        description: `AI gateway (${props.stage}): ${spec.name} every ${spec.scheduleMinutes} minute(s)`,
        schedule: Schedule.rate(Duration.minutes(spec.scheduleMinutes)),
        // A missed pass is made up by the next one: no retries piling up behind it.
        targets: [new LambdaFunction(workers[spec.name]!.function, { retryAttempts: 0, maxEventAge: Duration.minutes(spec.scheduleMinutes) })],
      });
    }

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
      for (const who of spec.observers ?? []) grant(who, 'DescribeExecution', ['states:DescribeExecution'], [executions]);

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
        ? {
            fifo: true,
            contentBasedDeduplication: false,
            deduplicationScope: DeduplicationScope.MESSAGE_GROUP,
            fifoThroughputLimit: FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
          }
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
  readonly function: LambdaFn;
  readonly role: Role;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: WorkerFunctionProps) {
    super(scope, id);
    const { spec } = props;
    this.spec = spec;
    const created = createGatewayFunction(this, {
      entry: spec.entry,
      functionName: `ai-gateway-${props.stage}-${spec.name}`,
      description: `AI gateway (${props.stage}): ${spec.description}`,
      roleDescription: `AI gateway (${props.stage}) ${spec.name} worker`,
      access: workerAccessFor(spec.name),
      timeout: Duration.seconds(spec.timeoutSeconds),
      memorySize: props.memorySize,
      logRetentionDays: props.logRetentionDays,
      tables: props.tables,
      providerCredentialsKey: props.providerCredentialsKey,
    });
    this.function = created.function;
    this.role = created.role;
    this.logGroup = created.logGroup;
  }
}
