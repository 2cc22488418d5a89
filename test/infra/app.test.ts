import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { App, CfnElement, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { Policy } from 'aws-cdk-lib/aws-iam';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { beforeAll, describe, expect, it } from 'vitest';
import { TABLE_NAMES, type TableName } from '../../functions/shared/tables';
import { ENDPOINT_GROUPS, FALLBACK_GROUP, groupForPath } from '../../infra/endpoint-groups';
import {
  DYNAMODB_READ_ACTIONS,
  DYNAMODB_WRITE_ACTIONS,
  FILES_KEY_ACTIONS,
  FILES_OBJECT_ACTIONS,
  FUNCTION_ACCESS,
  KMS_ACTIONS,
  type TableAccess,
} from '../../infra/stacks/access';
import { buildApp, DEFAULT_OPTIONS, optionsFromContext, resolveOptions, type GatewayStacks } from '../../infra/stacks/index';
import { indexesOf, TABLE_SPECS } from '../../infra/tables';
import { REPO_ROOT } from '../../infra/bundling';
import { NODE_HEAP_OPTIONS } from '../../infra/node-options';
import { testApp } from '../support/cdk-app';

// One synthesis for the whole file, bundling skipped (asset hashes come from construct ids),
// with cdk-nag on: a finding makes app.synth() throw, which the last test reports.
let app: App;
let stacks: GatewayStacks;
let data: Template;
let api: Template;
let synthError: Error | undefined;

const logicalId = (stack: Stack, element: unknown) => stack.getLogicalId(element as CfnElement);
const tableLogicalId = (name: TableName) => logicalId(stacks.data, stacks.data.tables[name].node.defaultChild);
type Json = Record<string, unknown>;

const OPTIONS = { stage: 'test', logRetentionDays: RetentionDays.TWO_WEEKS, memorySize: 1536 };
const skipBundling = () => testApp({ context: { 'aws:cdk:bundling-stacks': [] } });

beforeAll(() => {
  app = skipBundling();
  stacks = buildApp(app, OPTIONS);
  try {
    app.synth();
  } catch (err) {
    // Reported by the cdk-nag test; the other assertions run on the same stacks without nag.
    synthError = err as Error;
    stacks = buildApp(skipBundling(), { ...OPTIONS, nag: false });
  }
  data = Template.fromStack(stacks.data);
  api = Template.fromStack(stacks.api);
});

describe('app options', () => {
  it('defaults, and reads context values given as strings by the CLI', () => {
    expect(optionsFromContext(testApp())).toEqual({ ...DEFAULT_OPTIONS, nag: true });
    const ctx = testApp({ context: { stage: 'dev', logRetentionDays: '7', memorySize: '2048', nag: 'false' } });
    expect(optionsFromContext(ctx)).toEqual({ stage: 'dev', logRetentionDays: 7, memorySize: 2048, capacity: 'on-demand', nag: false });
  });

  it('reads the CORS origins: any by default, none, or a list of origins', () => {
    expect(optionsFromContext(testApp({ context: { corsOrigins: '*' } })).corsOrigins).toBeUndefined();
    expect(resolveOptions({ corsOrigins: 'none' }).corsOrigins).toBe('');
    expect(resolveOptions({ corsOrigins: ' https://App.example.com , http://localhost:3000' }).corsOrigins).toBe(
      'https://app.example.com,http://localhost:3000',
    );
    for (const bad of ['app.example.com', 'https://app.example.com/', 'https://app.example.com/path', 'ftp://x.example', 'https://a.example,*']) {
      expect(() => resolveOptions({ corsOrigins: bad }), bad).toThrow(/'corsOrigins' must be/);
    }
  });

  it('rejects values AWS would refuse, naming the setting', () => {
    expect(() => resolveOptions({ stage: 'Prod_1' })).toThrow(/'stage'/);
    expect(() => resolveOptions({ logRetentionDays: '10' })).toThrow(/'logRetentionDays'/);
    expect(() => resolveOptions({ memorySize: '64' })).toThrow(/'memorySize'/);
    expect(() => resolveOptions({ memorySize: '1024.5' })).toThrow(/'memorySize'/);
  });
});

describe('data stack', () => {
  it('creates every table of infra/tables.ts with its keys, index and TTL, on demand, PITR, encrypted, retained', () => {
    data.resourceCountIs('AWS::DynamoDB::Table', TABLE_SPECS.length);
    for (const spec of TABLE_SPECS) {
      const table = data.findResources('AWS::DynamoDB::Table')[tableLogicalId(spec.name)];
      expect(table, spec.name).toBeDefined();
      expect(table!.DeletionPolicy).toBe('Retain');
      expect(table!.UpdateReplacePolicy).toBe('Retain');
      const p = table!.Properties as Json;
      expect(p.KeySchema).toEqual([
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ]);
      expect(p.BillingMode).toBe('PAY_PER_REQUEST');
      expect(p.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
      expect(p.SSESpecification).toEqual({ SSEEnabled: true });
      const indexes = indexesOf(spec);
      if (indexes.length) {
        expect(p.GlobalSecondaryIndexes, spec.name).toEqual(
          indexes.map((index) => ({
            IndexName: index.name,
            KeySchema: [
              { AttributeName: index.partitionKey, KeyType: 'HASH' },
              { AttributeName: index.sortKey, KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'ALL' },
          })),
        );
      } else {
        expect(p.GlobalSecondaryIndexes, spec.name).toBeUndefined();
      }
      const attrs = (p.AttributeDefinitions as Array<{ AttributeName: string; AttributeType: string }>).map((a) => a.AttributeName);
      expect(attrs.sort()).toEqual([...new Set(['pk', 'sk', ...indexes.flatMap((i) => [i.partitionKey, i.sortKey])])].sort());
      if (spec.ttlAttribute) expect(p.TimeToLiveSpecification).toEqual({ AttributeName: 'ttl', Enabled: true });
      else expect(p.TimeToLiveSpecification, spec.name).toBeUndefined();
    }
    expect(
      TABLE_SPECS.filter((s) => s.ttlAttribute)
        .map((s) => s.name)
        .sort(),
    ).toEqual(['cache', 'idempotency', 'jobs', 'logs', 'sessions', 'usage']);
  });

  it('has a rotating, retained KMS key with an alias for provider credentials', () => {
    data.hasResource('AWS::KMS::Key', {
      Properties: { EnableKeyRotation: true },
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
    data.hasResourceProperties('AWS::KMS::Alias', { AliasName: 'alias/ai-gateway/test/provider-credentials' });
  });

  it('outputs every table name', () => {
    const outputs = data.toJSON().Outputs as Record<string, { Value: unknown }>;
    for (const name of TABLE_NAMES) {
      const out = Object.values(outputs).find((o) => JSON.stringify(o.Value) === JSON.stringify({ Ref: tableLogicalId(name) }));
      expect(out, name).toBeDefined();
    }
  });
});

describe('API stack: functions', () => {
  it('has one function per endpoint group with runtime, arch, memory, timeout, JSON logs, tracing', () => {
    api.resourceCountIs('AWS::Lambda::Function', ENDPOINT_GROUPS.length);
    const functions = api.findResources('AWS::Lambda::Function');
    for (const group of ENDPOINT_GROUPS) {
      const fn = stacks.api.functions[group.name]!;
      const res = functions[logicalId(stacks.api, fn.function.node.defaultChild)];
      expect(res, group.name).toBeDefined();
      const p = res!.Properties as Json;
      expect(p).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        MemorySize: 1536,
        Timeout: 900,
        Handler: 'index.handler',
        TracingConfig: { Mode: 'Active' },
        LoggingConfig: { LogFormat: 'JSON', LogGroup: { Ref: logicalId(stacks.api, fn.logGroup.node.defaultChild) } },
      });
    }
    api.resourcePropertiesCountIs('AWS::Logs::LogGroup', { RetentionInDays: 14 }, ENDPOINT_GROUPS.length + 1);
  });

  it('gives every function every table name, the key and the Powertools settings', () => {
    for (const group of ENDPOINT_GROUPS) {
      const fn = stacks.api.functions[group.name]!;
      const vars = (api.findResources('AWS::Lambda::Function')[logicalId(stacks.api, fn.function.node.defaultChild)]!.Properties as Json).Environment as {
        Variables: Record<string, unknown>;
      };
      for (const spec of TABLE_SPECS) {
        expect(JSON.stringify(vars.Variables[spec.envVar]), `${group.name} ${spec.envVar}`).toContain(`ExportsOutputRef${tableLogicalId(spec.name)}`);
      }
      expect(JSON.stringify(vars.Variables.PROVIDER_CREDENTIALS_KEY_ID)).toContain('ProviderCredentialsKey');
      expect(vars.Variables).toMatchObject({ POWERTOOLS_SERVICE_NAME: 'ai-gateway', POWERTOOLS_METRICS_NAMESPACE: 'AiGateway' });
      expect(vars.Variables.NODE_OPTIONS).toBe('--enable-source-maps --max-semi-space-size=16');
    }
  });

  it('the local runtime (npm start) runs with the V8 options of the Lambda functions', () => {
    const start = (JSON.parse(readFileSync(resolve(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
    for (const option of NODE_HEAP_OPTIONS) expect(start.split(' ')).toContain(option);
  });
});

describe('API stack: REST API', () => {
  it('is a Regional REST API that passes every body through as binary', () => {
    api.hasResourceProperties('AWS::ApiGateway::RestApi', {
      EndpointConfiguration: { Types: ['REGIONAL'] },
      BinaryMediaTypes: ['*/*'],
    });
  });

  it('streams every integration for up to 15 minutes through response-streaming-invocations', () => {
    const methods = Object.values(api.findResources('AWS::ApiGateway::Method'));
    expect(methods.length).toBe(stacks.api.routes.length);
    for (const m of methods) {
      const integration = (m.Properties as Json).Integration as Json;
      expect(integration).toMatchObject({ Type: 'AWS_PROXY', ResponseTransferMode: 'STREAM', TimeoutInMillis: 900000 });
      const uri = JSON.stringify(integration.Uri);
      expect(uri).toContain(':lambda:path/2021-11-15/functions/');
      expect(uri).toContain('/response-streaming-invocations');
    }
  });

  it('routes each group prefix and its subpaths to that group, and everything else to the gateway', () => {
    const byPath = new Map(stacks.api.routes.map((r) => [r.path, r.group]));
    const expected = new Map<string, string>([
      ['/', FALLBACK_GROUP],
      ['/{proxy+}', FALLBACK_GROUP],
      ['/v1', FALLBACK_GROUP],
      ['/v1/{proxy+}', FALLBACK_GROUP],
    ]);
    for (const g of ENDPOINT_GROUPS) {
      for (const prefix of g.prefixes) {
        expected.set(`/v1/${prefix}`, g.name);
        expected.set(`/v1/${prefix}/{proxy+}`, g.name);
        // A nested prefix's parent (`/v1/messages`) and the rest under it stay the fallback group's.
        for (let end = prefix.lastIndexOf('/'); end > 0; end = prefix.lastIndexOf('/', end - 1)) {
          expected.set(`/v1/${prefix.slice(0, end)}`, FALLBACK_GROUP);
          expected.set(`/v1/${prefix.slice(0, end)}/{proxy+}`, FALLBACK_GROUP);
        }
      }
      for (const root of g.roots ?? []) {
        expected.set(`/${root}`, g.name);
        expected.set(`/${root}/{proxy+}`, g.name);
      }
    }
    expect(byPath).toEqual(expected);
    // Anthropic's Message Batches run on the batches group; the Messages API beside them stays the gateway's.
    expect(byPath.get('/v1/messages/batches/{proxy+}')).toBe('batches');
    expect([groupForPath('/v1/messages'), groupForPath('/v1/messages/count_tokens'), groupForPath('/v1/messages/batches/msgbatch_x/results')]).toEqual([
      FALLBACK_GROUP,
      FALLBACK_GROUP,
      'batches',
    ]);
    // Same answer as the local runtime's router for a concrete path under each resource.
    for (const [path, group] of byPath) expect(groupForPath(path.replace('{proxy+}', 'a/b')), path).toBe(group);

    // ... and each method really integrates the function of its group.
    const methods = api.findResources('AWS::ApiGateway::Method');
    for (const r of stacks.api.routes) {
      const method = methods[logicalId(stacks.api, r.method.node.defaultChild)]!;
      const fnId = logicalId(stacks.api, stacks.api.functions[r.group]!.function.node.defaultChild);
      expect(JSON.stringify((method.Properties as Json).Integration), r.path).toContain(`"${fnId}"`);
      expect((method.Properties as Json).HttpMethod).toBe('ANY');
    }
  });

  it('allows API Gateway to invoke each function only from its own methods', () => {
    api.resourceCountIs('AWS::Lambda::Permission', stacks.api.routes.length);
    api.allResourcesProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      Principal: 'apigateway.amazonaws.com',
      SourceArn: Match.anyValue(),
    });
  });

  it('logs access as JSON and throttles the stage by default', () => {
    api.hasResourceProperties('AWS::ApiGateway::Stage', {
      StageName: 'test',
      AccessLogSetting: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('"requestId":"\\$context.requestId"') },
      MethodSettings: [Match.objectLike({ HttpMethod: '*', ResourcePath: '/*', ThrottlingRateLimit: 1000, ThrottlingBurstLimit: 2000 })],
    });
  });

  it("answers API Gateway's own errors in the OpenAI error shape", () => {
    api.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'THROTTLED',
      StatusCode: '429',
      // The SDKs retry a 429 anyway; the header says so explicitly, as the functions' own 429s do.
      ResponseParameters: { 'gatewayresponse.header.x-should-retry': "'true'" },
      ResponseTemplates: { 'application/json': Match.stringLikeRegexp('"type":"rate_limit_error","param":null,"code":null') },
    });
    // A body over 10 MB never reaches a function: API Gateway's 413 carries the functions' code.
    api.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'REQUEST_TOO_LARGE',
      StatusCode: '413',
      ResponseTemplates: { 'application/json': Match.stringLikeRegexp('"type":"invalid_request_error","param":null,"code":"payload_too_large"\\}\\}$') },
    });
    for (const type of ['DEFAULT_4XX', 'DEFAULT_5XX', 'REQUEST_TOO_LARGE', 'INTEGRATION_TIMEOUT', 'MISSING_AUTHENTICATION_TOKEN']) {
      api.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
        ResponseType: type,
        ResponseTemplates: { 'application/json': Match.stringLikeRegexp('^\\{"error":\\{"message":') },
        // Readable by a page of any origin, as the functions' own answers are by default.
        ResponseParameters: Match.objectLike({ 'gatewayresponse.header.Access-Control-Allow-Origin': "'*'" }),
      });
    }
    // The default needs no setting on the functions.
    for (const fn of Object.values(api.findResources('AWS::Lambda::Function'))) {
      expect(fn.Properties.Environment.Variables.CORS_ALLOWED_ORIGINS).toBeUndefined();
    }
  });

  it('outputs the OpenAI base URL', () => {
    api.hasOutput('BaseUrl', { Value: { 'Fn::Join': ['', Match.arrayWith(['/v1'])] } });
  });
});

interface Statement {
  Sid?: string;
  Action: string | string[];
  Resource: unknown;
}
const statementsOf = (group: string): Statement[] => {
  const fn = stacks.api.functions[group]!;
  const policy = fn.role.node.findChild('DefaultPolicy') as Policy;
  const res = api.findResources('AWS::IAM::Policy')[logicalId(stacks.api, policy.node.defaultChild)]!;
  return ((res.Properties as Json).PolicyDocument as { Statement: Statement[] }).Statement;
};
const actions = (s: Statement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);

describe('API stack: least privilege', () => {
  it('has an access entry for every endpoint group', () => {
    expect(Object.keys(FUNCTION_ACCESS).sort()).toEqual(ENDPOINT_GROUPS.map((g) => g.name).sort());
  });

  it.each(ENDPOINT_GROUPS.map((g) => g.name))('%s reaches exactly the tables and key uses of infra/stacks/access.ts', (group) => {
    const statements = statementsOf(group);
    const granted: Partial<Record<TableName, TableAccess>> = {};
    for (const s of statements.filter((st) => actions(st).some((a) => a.startsWith('dynamodb:')))) {
      const resources = JSON.stringify(s.Resource);
      const tables = TABLE_NAMES.filter((t) => resources.includes(`FnGetAtt${tableLogicalId(t)}Arn`));
      expect(tables, `one table per statement: ${resources}`).toHaveLength(1);
      const table = tables[0]!;
      const write = actions(s).some((a) => (DYNAMODB_WRITE_ACTIONS as readonly string[]).includes(a));
      expect(actions(s)).toEqual([...DYNAMODB_READ_ACTIONS, ...(write ? DYNAMODB_WRITE_ACTIONS : [])]);
      granted[table] = write ? 'readWrite' : 'read';
      // The table and each of its indexes: exact ARNs, no wildcards.
      const spec = TABLE_SPECS.find((t) => t.name === table)!;
      expect(resources).not.toContain('*');
      expect([...resources.matchAll(/\/index\/(\w+)/g)].map((m) => m[1]).sort()).toEqual(
        indexesOf(spec)
          .map((i) => i.name)
          .sort(),
      );
    }
    expect(granted).toEqual(FUNCTION_ACCESS[group]!.tables);

    // The files bucket's key is checked by the files tests below.
    const kms = statements.filter((s) => s.Sid !== 'FilesKey' && actions(s).some((a) => a.startsWith('kms:')));
    const expectedKms = KMS_ACTIONS[FUNCTION_ACCESS[group]!.providerCredentials];
    if (expectedKms.length === 0) expect(kms).toEqual([]);
    else {
      expect(kms).toHaveLength(1);
      expect(actions(kms[0]!).sort()).toEqual([...expectedKms].sort());
      expect(JSON.stringify(kms[0]!.Resource)).toContain('ExportsOutputFnGetAttProviderCredentialsKey');
    }

    // The only wildcard is X-Ray's, which has no resource-level permissions.
    for (const s of statements.filter((st) => JSON.stringify(st.Resource) === '"*"')) {
      expect(actions(s).every((a) => a.startsWith('xray:'))).toBe(true);
    }
  });

  it('keeps the policies function away from threads and credentials', () => {
    const text = JSON.stringify(statementsOf('policies'));
    expect(text).not.toContain(tableLogicalId('threads'));
    expect(text).not.toContain('kms:');
    expect(text).toContain(tableLogicalId('policies'));
  });

  it('attaches no AWS managed policies to function roles', () => {
    for (const role of Object.values(api.findResources('AWS::IAM::Role'))) {
      expect((role.Properties as Json).ManagedPolicyArns).toBeUndefined();
    }
  });
});

describe('files bucket (Files API)', () => {
  const filesBucket = () => {
    const buckets = Object.values(data.findResources('AWS::S3::Bucket')).filter(
      (b) => (b.Properties as Json).LifecycleConfiguration && JSON.stringify(b).includes('expires-days'),
    );
    expect(buckets).toHaveLength(1);
    return buckets[0]!.Properties as Json;
  };

  it('is SSE-KMS with its own rotated key, public access blocked, retained, logged', () => {
    const props = filesBucket();
    expect(props.BucketEncryption).toEqual({
      ServerSideEncryptionConfiguration: [
        {
          BucketKeyEnabled: true,
          ServerSideEncryptionByDefault: {
            SSEAlgorithm: 'aws:kms',
            KMSMasterKeyID: { 'Fn::GetAtt': [logicalId(stacks.data, stacks.data.files.key.node.defaultChild), 'Arn'] },
          },
        },
      ],
    });
    expect(props.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect((props.LoggingConfiguration as Json).DestinationBucketName).toBeDefined();
    data.hasResourceProperties('AWS::KMS::Key', { Description: Match.stringLikeRegexp('Files API'), EnableKeyRotation: true });
    data.hasResource('AWS::S3::Bucket', {
      DeletionPolicy: 'Retain',
      Properties: Match.objectLike({ LifecycleConfiguration: Match.anyValue(), BucketEncryption: Match.anyValue() }),
    });
  });

  it('refuses every request without TLS', () => {
    const policies = Object.values(data.findResources('AWS::S3::BucketPolicy')).map((p) => JSON.stringify(p));
    expect(policies.length).toBeGreaterThanOrEqual(2);
    for (const policy of policies) {
      expect(policy).toContain('"aws:SecureTransport":"false"');
      expect(policy).toContain('"Effect":"Deny"');
    }
  });

  it('expires tagged objects after their day count, and aborts unfinished multipart uploads', () => {
    const rules = ((filesBucket().LifecycleConfiguration as Json).Rules as Json[]).filter((r) => r.Status === 'Enabled');
    expect(rules.find((r) => r.Id === 'AbortIncompleteUploads')?.AbortIncompleteMultipartUpload).toEqual({ DaysAfterInitiation: 1 });
    const expiring = rules.filter((r) => r.TagFilters);
    expect(expiring).toHaveLength(30);
    for (const rule of expiring) {
      const days = (rule.TagFilters as Json[])[0]!;
      expect(days.Key).toBe('expires-days');
      expect(rule.ExpirationInDays).toBe(Number(days.Value));
    }
  });

  it('only the files function reaches its objects and key, with FILES_BUCKET set', () => {
    for (const group of ENDPOINT_GROUPS.map((g) => g.name)) {
      const statements = statementsOf(group);
      const objects = statements.find((s) => s.Sid === 'FilesObjects');
      const key = statements.find((s) => s.Sid === 'FilesKey');
      if (!FUNCTION_ACCESS[group]!.filesBucket) {
        expect(objects, group).toBeUndefined();
        expect(key, group).toBeUndefined();
        continue;
      }
      expect(actions(objects!).sort()).toEqual([...FILES_OBJECT_ACTIONS].sort());
      expect(JSON.stringify(objects!.Resource)).toMatch(/FilesBucketArn.*\/\*/);
      expect(actions(key!).sort()).toEqual([...FILES_KEY_ACTIONS].sort());
    }
    api.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('files endpoints'),
      Environment: { Variables: Match.objectLike({ FILES_BUCKET: Match.anyValue() }) },
    });
  });
});

describe('cdk-nag (AwsSolutions)', () => {
  it('has no unacknowledged findings', () => {
    expect(synthError?.message).toBeUndefined();
    expect(() => app.synth()).not.toThrow();
  });
});
