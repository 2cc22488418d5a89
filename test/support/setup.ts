// Handlers reference the Lambda runtime's `awslambda` global at import time.
import '../../infra/local/awslambda-shim';
import { randomUUID } from 'node:crypto';
import { afterAll, inject, vi } from 'vitest';
import { TABLE_SPECS } from '../../infra/tables';

// Files may share their processes (vitest.config.ts). Each still imports the project's own
// modules afresh, so config, caches and clients start from this file's settings, and leaves
// the environment as it found it.
vi.resetModules();
const environment = { ...process.env };
afterAll(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  vi.unstubAllGlobals();
  for (const name of Object.keys(process.env)) if (!(name in environment)) delete process.env[name];
  Object.assign(process.env, environment);
});

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
