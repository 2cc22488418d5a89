import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENDPOINT_GROUPS } from '../../infra/endpoint-groups';
import { buildApp, type GatewayStacks } from '../../infra/stacks/index';

// The one synthesis that really bundles (the other infra tests skip it): the API stack's
// functions, built by infra/bundling.ts `functionCode` at synth as `cdk deploy` would.
let outdir: string;
let stacks: GatewayStacks;
let template: Template;

beforeAll(() => {
  outdir = mkdtempSync(join(tmpdir(), 'gateway-synth-'));
  const app = new App({ outdir, context: { 'aws:cdk:bundling-stacks': ['**/AiGateway-test-Api'] } });
  stacks = buildApp(app, { stage: 'test', logRetentionDays: RetentionDays.TWO_WEEKS, memorySize: 1024, nag: false });
  app.synth();
  template = Template.fromStack(stacks.api);
}, 120_000);
afterAll(() => {
  if (outdir) rmSync(outdir, { recursive: true, force: true });
});

describe('function code assets (bundled at synth)', () => {
  it('every endpoint group gets its own bundle, with index.mjs exporting the handler', () => {
    const functions = Object.values(template.findResources('AWS::Lambda::Function')) as Array<{ Properties: { Handler: string; Code: { S3Key: string } } }>;
    const groupFunctions = functions.filter((f) => f.Properties.Handler === 'index.handler');
    expect(groupFunctions).toHaveLength(ENDPOINT_GROUPS.length);
    const keys = groupFunctions.map((f) => JSON.stringify(f.Properties.Code.S3Key));
    // One asset per function: CDK caches assets by source and bundling options.
    expect(new Set(keys).size).toBe(ENDPOINT_GROUPS.length);

    for (const fn of groupFunctions) {
      // The default synthesizer names the object `<asset hash>.zip`, staged as `asset.<hash>/`.
      const dir = join(outdir, `asset.${String(fn.Properties.Code.S3Key).replace(/\.zip$/, '')}`);
      expect(existsSync(join(dir, 'index.mjs')), dir).toBe(true);
      expect(readFileSync(join(dir, 'index.mjs'), 'utf8')).toMatch(/export\s*\{[^}]*\bas handler\b/);
    }
  });
});
