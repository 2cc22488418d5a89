import { resolve } from 'node:path';
import { Duration } from 'aws-cdk-lib';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { Architecture, LoggingFormat, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { GSI1, type TableName } from '../../functions/shared/tables';
import { PRODUCTION_BUNDLING } from '../bundling';
import type { EndpointGroup } from '../endpoint-groups';
import { TABLE_SPECS } from '../tables';
import { accessFor, DYNAMODB_READ_ACTIONS, DYNAMODB_WRITE_ACTIONS, KMS_ACTIONS } from './access';
import { acknowledge } from './nag';

export const REPO_ROOT = resolve(import.meta.dirname, '../..');

export const LAMBDA_RUNTIME = Runtime.NODEJS_22_X;

export interface EndpointFunctionProps {
  group: EndpointGroup;
  stage: string;
  memorySize: number;
  logRetentionDays: RetentionDays;
  tables: Readonly<Record<TableName, Table>>;
  providerCredentialsKey: IKey;
}

/**
 * One endpoint group's Lambda (DESIGN.md §2): a response-streaming handler bundled with
 * esbuild into one minified ESM file (AWS SDK included, see aws-stack-notes §6), its own
 * log group with retention, and its own role that carries only the grants of
 * infra/stacks/access.ts.
 */
export class EndpointFunction extends Construct {
  readonly function: NodejsFunction;
  readonly role: Role;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: EndpointFunctionProps) {
    super(scope, id);
    const { group } = props;
    const access = accessFor(group.name);

    this.logGroup = new LogGroup(this, 'LogGroup', { retention: props.logRetentionDays });

    // An own role instead of AWSLambdaBasicExecutionRole: that managed policy may create and
    // write any log group in the account; this one writes only to the function's log group.
    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `AI gateway (${props.stage}) ${group.name} function`,
    });
    this.logGroup.grantWrite(this.role);

    for (const [name, mode] of Object.entries(access.tables) as Array<[TableName, 'read' | 'readWrite']>) {
      const table = props.tables[name];
      const spec = TABLE_SPECS.find((s) => s.name === name)!;
      this.role.addToPrincipalPolicy(
        new PolicyStatement({
          sid: `${mode === 'read' ? 'Read' : 'ReadWrite'}${name[0]!.toUpperCase()}${name.slice(1)}Table`,
          actions: [...DYNAMODB_READ_ACTIONS, ...(mode === 'readWrite' ? DYNAMODB_WRITE_ACTIONS : [])],
          resources: [table.tableArn, ...(spec.gsi1 ? [`${table.tableArn}/index/${GSI1}`] : [])],
        }),
      );
    }
    const kmsActions = KMS_ACTIONS[access.providerCredentials];
    if (kmsActions.length > 0) {
      this.role.addToPrincipalPolicy(
        new PolicyStatement({
          sid: 'ProviderCredentialsKey',
          actions: [...kmsActions],
          resources: [props.providerCredentialsKey.keyArn],
        }),
      );
    }

    this.function = new NodejsFunction(this, 'Function', {
      description: `AI gateway (${props.stage}): ${group.name} endpoints`,
      entry: resolve(REPO_ROOT, group.entry),
      handler: 'handler',
      projectRoot: REPO_ROOT,
      depsLockFilePath: resolve(REPO_ROOT, 'package-lock.json'),
      runtime: LAMBDA_RUNTIME,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize,
      // Streams may last as long as API Gateway allows (15 min); the function must outlive them.
      timeout: Duration.minutes(15),
      role: this.role,
      logGroup: this.logGroup,
      loggingFormat: LoggingFormat.JSON,
      tracing: Tracing.ACTIVE,
      environment: {
        ...Object.fromEntries(TABLE_SPECS.map((spec) => [spec.envVar, props.tables[spec.name].tableName])),
        PROVIDER_CREDENTIALS_KEY_ID: props.providerCredentialsKey.keyArn,
        POWERTOOLS_SERVICE_NAME: 'ai-gateway',
        POWERTOOLS_METRICS_NAMESPACE: 'AiGateway',
        // Stack traces in the logs point at the TypeScript sources.
        NODE_OPTIONS: '--enable-source-maps',
      },
      // The production esbuild settings, shared with the benchmarks' bundles (infra/bundling.ts).
      bundling: PRODUCTION_BUNDLING,
    });

    acknowledge(this.function, 'AwsSolutions-L1');
    acknowledge(this.role, 'AwsSolutions-IAM5[Resource::*]');
  }
}
