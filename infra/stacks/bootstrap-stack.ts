import { CfnOutput, CrossStackReferences, CustomResource, ReferenceStrength, RemovalPolicy, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import type { TableName } from '../../functions/shared/tables';
import { WorkerFunction, type WorkerFunctionSpec } from './workflows-stack';

export interface BootstrapStackProps extends StackProps {
  stage: string;
  logRetentionDays: RetentionDays;
  tables: Readonly<Record<TableName, Table>>;
  providerCredentialsKey: IKey;
}

/** The custom resource's function (functions/workers/bootstrap-admin.ts); grants in access.ts WORKER_ACCESS. */
export const BOOTSTRAP_WORKER: WorkerFunctionSpec = {
  name: 'bootstrap-admin',
  entry: 'functions/workers/bootstrap-admin.ts',
  description: 'deploy-time bootstrap: organisation, default workspace and the admin key held in Secrets Manager',
  timeoutSeconds: 120,
};

/** Length of the generated admin key: 64 letters and digits, about 380 bits. */
export const ADMIN_KEY_LENGTH = 64;

const REASONS = {
  secretRotation:
    'The secret is the bootstrap admin gateway key; its SHA-256 is registered in the control table, so a Secrets Manager rotation would silently replace the value without registering it and lock the operator out. Rotate by creating a new admin key with POST /v1/api-keys and revoking this one (docs/deploy.md, "The admin key").',
} as const;

/**
 * The first admin key on AWS:
 * - a Secrets Manager secret whose value Secrets Manager generates (the key never passes
 *   through CloudFormation, the CLI or a template), encrypted with the account's
 *   aws/secretsmanager key and retained on delete, like the tables that hold its hash;
 * - a custom resource whose function reads that secret and registers it with `bootstrap()`
 *   (idempotent: an Update finds the key registered and changes nothing; Delete does nothing).
 * Outputs name the secret (ARN and a ready-to-run read command), never its value.
 */
export class BootstrapStack extends Stack {
  readonly adminKeySecret: Secret;
  readonly worker: WorkerFunction;
  readonly customResource: CustomResource;

  constructor(scope: Construct, id: string, props: BootstrapStackProps) {
    super(scope, id, props);
    CrossStackReferences.of(this).consume(ReferenceStrength.STRONG);

    this.adminKeySecret = new Secret(this, 'AdminKeySecret', {
      description: `AI gateway (${props.stage}): the bootstrap admin key (send it as x-gateway-api-key; role org-admin, scope gateway)`,
      generateSecretString: { passwordLength: ADMIN_KEY_LENGTH, excludePunctuation: true, includeSpace: false, requireEachIncludedType: true },
      // The control table keeps the key's hash after a teardown; the secret is its only copy.
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(this.adminKeySecret).acknowledge({ id: 'AwsSolutions-SMG4', reason: REASONS.secretRotation });

    this.worker = new WorkerFunction(this, 'BootstrapAdmin', {
      spec: BOOTSTRAP_WORKER,
      stage: props.stage,
      memorySize: 512,
      logRetentionDays: props.logRetentionDays,
      tables: props.tables,
      providerCredentialsKey: props.providerCredentialsKey,
    });
    // Exactly this secret, exactly this action (no DescribeSecret, no other version stages).
    this.worker.role.addToPrincipalPolicy(
      new PolicyStatement({ sid: 'ReadAdminKeySecret', actions: ['secretsmanager:GetSecretValue'], resources: [this.adminKeySecret.secretArn] }),
    );

    this.customResource = new CustomResource(this, 'AdminKey', {
      serviceToken: this.worker.function.functionArn,
      resourceType: 'Custom::GatewayBootstrap',
      // The ARN only: the function reads the value itself.
      properties: { SecretArn: this.adminKeySecret.secretArn },
    });
    // The role's policy (table and secret grants) must exist before the first invocation.
    this.customResource.node.addDependency(this.worker.role);

    new CfnOutput(this, 'AdminKeySecretArn', {
      value: this.adminKeySecret.secretArn,
      description: 'Secrets Manager secret holding the bootstrap admin key (x-gateway-api-key)',
    });
    new CfnOutput(this, 'AdminKeySecretName', {
      value: this.adminKeySecret.secretName,
      description: 'Name of the secret holding the bootstrap admin key',
    });
    new CfnOutput(this, 'ReadAdminKeyCommand', {
      value: `aws secretsmanager get-secret-value --secret-id ${this.adminKeySecret.secretArn} --query SecretString --output text`,
      description: 'Prints the bootstrap admin key',
    });
  }
}
