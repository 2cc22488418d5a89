import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';

/**
 * Local S3 for the Files API: fauxqs (started by ./sqs.ts) serves S3 on the same loopback
 * endpoint as SQS. This creates the files bucket there and returns the settings that point
 * functions/files at it. With a data folder the objects are kept on disk (./s3-store.ts) and
 * survive a restart; without one (`GATEWAY_DATA_DIR=memory`) they live as long as the process.
 */
export const LOCAL_FILES_BUCKET = 'gateway-files';

export async function createLocalFilesBucket(endpoint: string, region = 'us-east-1'): Promise<Record<string, string>> {
  const client = new S3Client({ region, endpoint, forcePathStyle: true, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  try {
    await client.send(new CreateBucketCommand({ Bucket: LOCAL_FILES_BUCKET }));
  } finally {
    client.destroy();
  }
  return { AWS_ENDPOINT_URL_S3: endpoint, FILES_BUCKET: LOCAL_FILES_BUCKET };
}
