// Handlers reference the Lambda runtime's `awslambda` global at import time.
import '../../infra/local/awslambda-shim';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, inject } from 'vitest';
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

// A CDK App made without an outdir synthesises into a new temporary folder that nothing
// removes (about 40 per run, and never the same twice): the file's apps share one, removed
// with the file. CDK_OUTDIR is where such an App writes.
const cdkOutdir = mkdtempSync(join(tmpdir(), 'gateway-test-cdk.out-'));
process.env.CDK_OUTDIR = cdkOutdir;
afterAll(() => rmSync(cdkOutdir, { recursive: true, force: true }));
