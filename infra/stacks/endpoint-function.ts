import { Duration } from 'aws-cdk-lib';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import type { Role } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import type { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { TableName } from '../../functions/shared/tables';
import type { EndpointGroup } from '../endpoint-groups';
import { accessFor } from './access';
import { createGatewayFunction } from './gateway-function';

export { LAMBDA_RUNTIME, REPO_ROOT } from './gateway-function';

export interface EndpointFunctionProps {
  group: EndpointGroup;
  stage: string;
  memorySize: number;
  /** The function will run on a capacity provider (Lambda Managed Instances). */
  managedInstances?: boolean;
  logRetentionDays: RetentionDays;
  tables: Readonly<Record<TableName, Table>>;
  providerCredentialsKey: IKey;
}

/**
 * One endpoint group's Lambda: a response-streaming handler bundled with
 * esbuild into minified ESM (infra/bundling.ts: index.mjs plus lazily loaded chunks), its own
 * log group with retention, and its own role that carries only the grants of
 * infra/stacks/access.ts.
 */
export class EndpointFunction extends Construct {
  readonly function: LambdaFunction;
  readonly role: Role;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: EndpointFunctionProps) {
    super(scope, id);
    const { group } = props;
    const created = createGatewayFunction(this, {
      entry: group.entry,
      description: `AI gateway (${props.stage}): ${group.name} endpoints`,
      roleDescription: `AI gateway (${props.stage}) ${group.name} function`,
      access: accessFor(group.name),
      ...(props.managedInstances ? { functionId: 'ManagedInstancesFunction' } : {}),
      // Streams may last as long as API Gateway allows (15 min); the function must outlive them.
      timeout: Duration.minutes(15),
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
