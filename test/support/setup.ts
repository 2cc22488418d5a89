// Handlers reference the Lambda runtime's `awslambda` global at import time.
import '../../infra/local/awslambda-shim';
import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import { TABLE_SPECS } from '../../infra/tables';

// Each test file gets its own tables in the shared DynamoDB Local. The settings are in
// place before any function module is imported, because config is read once.
const prefix = `t${randomUUID().slice(0, 8)}-`;
Object.assign(process.env, {
  GATEWAY_TEST_TABLE_PREFIX: prefix,
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
  AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
  ...Object.fromEntries(TABLE_SPECS.map((t) => [t.envVar, `${prefix}${t.name}`])),
});
