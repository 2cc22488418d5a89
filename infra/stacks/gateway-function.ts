import type { Duration } from 'aws-cdk-lib';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { Architecture, Function as LambdaFunction, LoggingFormat, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { TableName } from '../../functions/shared/tables';
import { functionCode, LAMBDA_HANDLER, REPO_ROOT } from '../bundling';
import { LAMBDA_NODE_OPTIONS } from '../node-options';
import { indexesOf, TABLE_SPECS } from '../tables';
import { DYNAMODB_READ_ACTIONS, DYNAMODB_WRITE_ACTIONS, KMS_ACTIONS, type FunctionAccess } from './access';
import { acknowledge } from './nag';
import { pascal } from './names';

export { REPO_ROOT };

export const LAMBDA_RUNTIME = Runtime.NODEJS_22_X;

export interface GatewayFunctionProps {
  /** Repository-relative handler module. */
  entry: string;
  description: string;
  roleDescription: string;
  functionName?: string;
  /**
   * Construct id of the function (default `Function`). A function on a capacity provider
   * uses another id: Lambda cannot remove a capacity provider from a function, so a switch
   * between on-demand and managed instances must replace the function, not update it.
   */
  functionId?: string;
  access: FunctionAccess;
  timeout: Duration;
  memorySize: number;
  logRetentionDays: RetentionDays;
  tables: Readonly<Record<TableName, Table>>;
  providerCredentialsKey: IKey;
}

/**
 * What every Lambda of the gateway shares, endpoint group or workflow worker: its own log
 * group with retention; its own role (instead of AWSLambdaBasicExecutionRole, which may
 * write any log group) limited to that log group, the tables of its access entry and the
 * KMS calls it makes; the production bundle; JSON logs and active tracing. Construct ids
 * are fixed so the templates of both callers stay as they were.
 */
export function createGatewayFunction(scope: Construct, props: GatewayFunctionProps) {
  const logGroup = new LogGroup(scope, 'LogGroup', { retention: props.logRetentionDays });
  const role = new Role(scope, 'Role', { assumedBy: new ServicePrincipal('lambda.amazonaws.com'), description: props.roleDescription });
  logGroup.grantWrite(role);
  for (const [name, mode] of Object.entries(props.access.tables) as Array<[TableName, 'read' | 'readWrite']>) {
    const table = props.tables[name];
    const spec = TABLE_SPECS.find((s) => s.name === name)!;
    role.addToPrincipalPolicy(
      new PolicyStatement({
        sid: `${mode === 'read' ? 'Read' : 'ReadWrite'}${pascal(name)}Table`,
        actions: [...DYNAMODB_READ_ACTIONS, ...(mode === 'readWrite' ? DYNAMODB_WRITE_ACTIONS : [])],
        resources: [table.tableArn, ...indexesOf(spec).map((index) => `${table.tableArn}/index/${index.name}`)],
      }),
    );
  }
  const kmsActions = KMS_ACTIONS[props.access.providerCredentials];
  if (kmsActions.length > 0) {
    role.addToPrincipalPolicy(
      new PolicyStatement({ sid: 'ProviderCredentialsKey', actions: [...kmsActions], resources: [props.providerCredentialsKey.keyArn] }),
    );
  }
  const fn = new LambdaFunction(scope, props.functionId ?? 'Function', {
    ...(props.functionName ? { functionName: props.functionName } : {}),
    description: props.description,
    // The production bundle (infra/bundling.ts), shared with the benchmarks and bundle tests.
    code: functionCode(props.entry),
    handler: LAMBDA_HANDLER,
    runtime: LAMBDA_RUNTIME,
    architecture: Architecture.ARM_64,
    memorySize: props.memorySize,
    timeout: props.timeout,
    role,
    logGroup,
    loggingFormat: LoggingFormat.JSON,
    tracing: Tracing.ACTIVE,
    environment: {
      ...Object.fromEntries(TABLE_SPECS.map((spec) => [spec.envVar, props.tables[spec.name].tableName])),
      PROVIDER_CREDENTIALS_KEY_ID: props.providerCredentialsKey.keyArn,
      POWERTOOLS_SERVICE_NAME: 'ai-gateway',
      POWERTOOLS_METRICS_NAMESPACE: 'AiGateway',
      // Stack traces in the logs point at the TypeScript sources; heap sizing (infra/node-options.ts).
      NODE_OPTIONS: LAMBDA_NODE_OPTIONS,
    },
  });
  acknowledge(fn, 'AwsSolutions-L1');
  acknowledge(role, 'AwsSolutions-IAM5[Resource::*]');
  return { function: fn, role, logGroup };
}
