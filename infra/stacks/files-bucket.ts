import { CfnOutput, Duration, RemovalPolicy } from 'aws-cdk-lib';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import { MAX_EXPIRY_SECONDS } from '../../functions/files/types';
import { acknowledge } from './nag';

/** Tag the Files API puts on an object that expires (functions/files/bucket.ts), valued in whole days. */
export const EXPIRY_TAG = 'expires-days';
const MAX_EXPIRY_DAYS = MAX_EXPIRY_SECONDS / 86400;

export const filesBucketArnExport = (stage: string) => `AiGateway-${stage}-FilesBucketArn`;

/**
 * The Files API's bytes (functions/files): SSE-KMS with its own rotated key (S3 Bucket Keys
 * keep the KMS calls per object, not per request), public access blocked, TLS only, access
 * logs in a second bucket. Expiry: one lifecycle rule per day count (1 to 30) matches the
 * object's `expires-days` tag; DynamoDB hides an expired file's record at once, the rule
 * removes the bytes within a day of it. Unfinished multipart uploads are aborted after a day.
 */
export class FilesBucket extends Construct {
  readonly bucket: Bucket;
  readonly key: Key;

  constructor(scope: Construct, id: string, props: { stage: string }) {
    super(scope, id);
    this.key = new Key(this, 'Key', {
      description: `AI gateway (${props.stage}): encrypts the Files API's objects`,
      alias: `alias/ai-gateway/${props.stage}/files`,
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const accessLogs = new Bucket(this, 'AccessLogs', {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_PREFERRED,
      lifecycleRules: [{ expiration: Duration.days(90) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    acknowledge(accessLogs, 'AwsSolutions-S1');
    this.bucket = new Bucket(this, 'Bucket', {
      encryption: BucketEncryption.KMS,
      encryptionKey: this.key,
      bucketKeyEnabled: true,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      serverAccessLogsBucket: accessLogs,
      serverAccessLogsPrefix: 'files/',
      removalPolicy: RemovalPolicy.RETAIN,
      lifecycleRules: [
        { id: 'AbortIncompleteUploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        ...Array.from({ length: MAX_EXPIRY_DAYS }, (_, i) => ({
          id: `Expire${i + 1}Days`,
          tagFilters: { [EXPIRY_TAG]: String(i + 1) },
          expiration: Duration.days(i + 1),
        })),
      ],
    });
    new CfnOutput(scope, 'FilesBucketName', { value: this.bucket.bucketName, description: 'FILES_BUCKET: the Files API objects' });
    // A fixed export: the API stack's grant names it, and so can its cdk-nag acknowledgement.
    new CfnOutput(scope, 'FilesBucketArn', { value: this.bucket.bucketArn, exportName: filesBucketArnExport(props.stage) });
  }
}
