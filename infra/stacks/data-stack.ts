import { CfnOutput, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import { AttributeType, BillingMode, ProjectionType, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { Key } from 'aws-cdk-lib/aws-kms';
import type { Construct } from 'constructs';
import type { TableName } from '../../functions/shared/tables';
import { indexesOf, TABLE_SPECS } from '../tables';
import { FilesBucket } from './files-bucket';
import { pascal } from './names';

export interface DataStackProps extends StackProps {
  stage: string;
}

/**
 * Everything that holds data and must outlive a redeploy: one DynamoDB table per bounded
 * context (infra/tables.ts is the one source of their shape) and the KMS key that wraps
 * managed-provider credentials, and the Files API's bucket (./files-bucket.ts). All of it is retained when the stack is deleted.
 */
export class DataStack extends Stack {
  readonly tables: Readonly<Record<TableName, Table>>;
  readonly providerCredentialsKey: Key;
  readonly files: FilesBucket;

  constructor(scope: Construct, id: string, props: DataStackProps) {
    super(scope, id, props);

    this.providerCredentialsKey = new Key(this, 'ProviderCredentialsKey', {
      description: `AI gateway (${props.stage}): wraps the data keys that encrypt managed-provider credentials`,
      alias: `alias/ai-gateway/${props.stage}/provider-credentials`,
      enableKeyRotation: true,
      // Deleting the key would make every stored provider credential unreadable.
      removalPolicy: RemovalPolicy.RETAIN,
    });
    new CfnOutput(this, 'ProviderCredentialsKeyArn', {
      value: this.providerCredentialsKey.keyArn,
      description: 'KMS key wrapping managed-provider credentials',
    });

    const tables: Partial<Record<TableName, Table>> = {};
    for (const spec of TABLE_SPECS) {
      const table = new Table(this, `${pascal(spec.name)}Table`, {
        partitionKey: { name: spec.partitionKey, type: AttributeType.STRING },
        sortKey: { name: spec.sortKey, type: AttributeType.STRING },
        billingMode: BillingMode.PAY_PER_REQUEST,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        encryption: TableEncryption.AWS_MANAGED,
        removalPolicy: RemovalPolicy.RETAIN,
        ...(spec.ttlAttribute ? { timeToLiveAttribute: spec.ttlAttribute } : {}),
      });
      for (const index of indexesOf(spec)) {
        table.addGlobalSecondaryIndex({
          indexName: index.name,
          partitionKey: { name: index.partitionKey, type: AttributeType.STRING },
          sortKey: { name: index.sortKey, type: AttributeType.STRING },
          projectionType: ProjectionType.ALL,
        });
      }
      new CfnOutput(this, `${pascal(spec.name)}TableName`, {
        value: table.tableName,
        description: `${spec.envVar}: ${spec.purpose}`,
      });
      tables[spec.name] = table;
    }
    this.tables = tables as Record<TableName, Table>;
    this.files = new FilesBucket(this, 'Files', { stage: props.stage });
  }
}
