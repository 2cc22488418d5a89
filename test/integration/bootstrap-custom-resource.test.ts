import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CloudFormationCustomResourceEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bootstrap } from '../../functions/admin/bootstrap';
import { findKeyBySecret, listKeys } from '../../functions/shared/stores/keys';
import { powertoolsLogger } from '../../functions/shared/telemetry/logger';
import {
  createBootstrapAdminHandler,
  getSecretValue,
  handler as deployedHandler,
  MIN_ADMIN_KEY_LENGTH,
  putResponse,
  type CfnResponse,
} from '../../functions/workers/bootstrap-admin';
import { createTables } from '../../infra/local/dynamodb';
import { TABLE_SPECS } from '../../infra/tables';

type Json = Record<string, any>;

// The bootstrap stack's custom resource function (its stack: test/infra/bootstrap.test.ts), against DynamoDB Local.
describe('bootstrap custom resource function', () => {
  const SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:AdminKeySecret-AbCdEf';
  const SECRET = 'Zr8qL2x9Vb4N7kPw3Tf6Hy1Jm5Qc0Ds8Ga2Ue4Xo7Ri9Wl3Ek6Yn1Sp5Bt0Mv8Hq';
  let secretValue = SECRET;
  let server: Server;
  let base: string;
  const smRequests: Array<{ headers: IncomingMessage['headers']; body: Json }> = [];
  const cfnResponses: Array<{ path: string; contentType: string | undefined; body: CfnResponse }> = [];

  const readBody = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    });

  beforeAll(async () => {
    const names = Object.fromEntries(TABLE_SPECS.map((s) => [s.name, process.env[s.envVar]!]));
    await createTables(inject('dynamodbEndpoint'), names);
    // One fake for both ends: Secrets Manager (POST /) and CloudFormation's response URL (PUT).
    server = createServer(async (req, res) => {
      const text = await readBody(req);
      if (req.method === 'POST' && req.headers['x-amz-target'] === 'secretsmanager.GetSecretValue') {
        const body = JSON.parse(text) as Json;
        smRequests.push({ headers: req.headers, body });
        res.setHeader('content-type', 'application/x-amz-json-1.1');
        if (body.SecretId !== SECRET_ARN) {
          res.statusCode = 400;
          res.end(JSON.stringify({ __type: 'ResourceNotFoundException', Message: "Secrets Manager can't find the specified secret." }));
          return;
        }
        res.end(JSON.stringify({ ARN: SECRET_ARN, Name: 'AdminKeySecret-AbCdEf', SecretString: secretValue, VersionId: 'v1' }));
        return;
      }
      if (req.method === 'PUT' && req.url?.startsWith('/cfn/')) {
        cfnResponses.push({ path: req.url, contentType: req.headers['content-type'], body: JSON.parse(text) as CfnResponse });
        res.end();
        return;
      }
      res.statusCode = 404;
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const handler = () =>
    createBootstrapAdminHandler({
      readSecret: (id) =>
        getSecretValue(id, { region: 'us-east-1', credentials: { accessKeyId: 'AKIDBOOTSTRAPTEST', secretAccessKey: 'test-secret' }, endpoint: `${base}/` }),
      bootstrap,
      respond: putResponse,
    });

  let requestCounter = 0;
  const event = (type: 'Create' | 'Update' | 'Delete', extra: Json = {}): CloudFormationCustomResourceEvent => {
    const requestId = `req-${++requestCounter}`;
    return {
      RequestType: type,
      ServiceToken: 'arn:aws:lambda:us-east-1:123456789012:function:ai-gateway-test-bootstrap-admin',
      ResponseURL: `${base}/cfn/${requestId}?X-Amz-Signature=abc`,
      StackId: 'arn:aws:cloudformation:us-east-1:123456789012:stack/AiGateway-test-Bootstrap/guid',
      RequestId: requestId,
      LogicalResourceId: 'AdminKey',
      ResourceType: 'Custom::GatewayBootstrap',
      ResourceProperties: { ServiceToken: 'arn:aws:lambda:us-east-1:123456789012:function:x', SecretArn: SECRET_ARN },
      ...(type === 'Create' ? {} : { PhysicalResourceId: 'ai-gateway-bootstrap-org_existing', OldResourceProperties: {} }),
      ...extra,
    } as CloudFormationCustomResourceEvent;
  };
  const context = { getRemainingTimeInMillis: () => 60_000, logGroupName: '/aws/lambda/ai-gateway-test-bootstrap-admin' };

  /** Runs the handler with every log level on, capturing everything written to stdout/stderr. */
  async function run(e: CloudFormationCustomResourceEvent): Promise<{ response: CfnResponse; output: string }> {
    const written: string[] = [];
    const out = process.stdout.write.bind(process.stdout);
    const err = process.stderr.write.bind(process.stderr);
    const capture = (chunk: unknown) => {
      written.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
      return true;
    };
    process.stdout.write = capture as typeof process.stdout.write;
    process.stderr.write = capture as typeof process.stderr.write;
    const level = powertoolsLogger.getLevelName();
    powertoolsLogger.setLogLevel('DEBUG');
    try {
      const response = await handler()(e, context);
      return { response, output: written.join('') };
    } finally {
      powertoolsLogger.setLogLevel(level);
      process.stdout.write = out;
      process.stderr.write = err;
    }
  }

  let createResponse: CfnResponse;

  it('Create: registers the generated key, answers CloudFormation with ids only', async () => {
    const { response, output } = await run(event('Create'));
    createResponse = response;
    expect(response).toMatchObject({ Status: 'SUCCESS', NoEcho: true, RequestId: `req-${requestCounter}`, LogicalResourceId: 'AdminKey' });
    expect(response.PhysicalResourceId).toMatch(/^ai-gateway-bootstrap-/);
    expect(Object.keys(response.Data!).sort()).toEqual(['AdminKeyCreated', 'OrganisationId', 'WorkspaceId']);
    expect(response.Data!.AdminKeyCreated).toBe('true');

    // The response really went to the pre-signed URL, as a PUT with an empty content type.
    const sent = cfnResponses.at(-1)!;
    expect(sent.path).toBe(`/cfn/req-${requestCounter}?X-Amz-Signature=abc`);
    expect(sent.contentType).toBe('');
    expect(sent.body).toEqual(response);

    // A SigV4-signed GetSecretValue of exactly the secret named by the resource.
    const sm = smRequests.at(-1)!;
    expect(sm.body).toEqual({ SecretId: SECRET_ARN });
    expect(sm.headers['content-type']).toBe('application/x-amz-json-1.1');
    expect(String(sm.headers.authorization)).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDBOOTSTRAPTEST\/\d{8}\/us-east-1\/secretsmanager\/aws4_request, SignedHeaders=[^,]*x-amz-target[^,]*, Signature=[0-9a-f]{64}$/,
    );
    expect(sm.headers['x-amz-date']).toMatch(/^\d{8}T\d{6}Z$/);

    // The key works as the organisation's admin key, with model traffic (auth looks keys up exactly like this).
    const key = await findKeyBySecret(SECRET);
    expect(key).toMatchObject({
      role: 'org-admin',
      status: 'active',
      workspace_id: response.Data!.WorkspaceId,
      organisation_id: response.Data!.OrganisationId,
      expires_at: null,
    });
    expect(key!.scopes).toEqual(['gateway']);

    // The key appears nowhere: not in the response, not in the logs.
    expect(JSON.stringify(sent.body)).not.toContain(SECRET);
    expect(output).toContain('bootstrap admin key registered');
    expect(output).not.toContain(SECRET);
    expect(output).not.toContain(SECRET.slice(0, 16));
  });

  it('Update: idempotent, keeps the physical id and registers nothing new', async () => {
    const { response, output } = await run(event('Update', { PhysicalResourceId: createResponse.PhysicalResourceId }));
    expect(response).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: createResponse.PhysicalResourceId, NoEcho: true });
    expect(response.Data).toEqual({ ...createResponse.Data, AdminKeyCreated: 'false' });
    const keys = await listKeys(response.Data!.WorkspaceId!, { limit: 100, order: 'asc' });
    expect(keys.items.filter((k) => k.name === 'bootstrap admin')).toHaveLength(1);
    expect(output).not.toContain(SECRET);
  });

  it('Delete: does nothing (no secret read, the key stays valid) and succeeds', async () => {
    const before = smRequests.length;
    const { response } = await run(event('Delete', { PhysicalResourceId: createResponse.PhysicalResourceId }));
    expect(response).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: createResponse.PhysicalResourceId });
    expect(response.Data).toBeUndefined();
    expect(smRequests.length).toBe(before);
    expect((await findKeyBySecret(SECRET))?.status).toBe('active');
  });

  it('fails the deployment with the reason when the secret cannot be read', async () => {
    const { response, output } = await run(event('Create', { ResourceProperties: { ServiceToken: 'x', SecretArn: `${SECRET_ARN}-missing` } }));
    expect(response.Status).toBe('FAILED');
    expect(response.Reason).toContain('HTTP 400 ResourceNotFoundException');
    expect(response.Reason).toContain('/aws/lambda/ai-gateway-test-bootstrap-admin');
    // A failed Create has no resource: its id is one the rollback's Delete can ignore.
    expect(response.PhysicalResourceId).toBe(`ai-gateway-bootstrap-failed-req-${requestCounter}`);
    expect(cfnResponses.at(-1)!.body.Status).toBe('FAILED');
    expect(output).toContain('bootstrap custom resource failed');
  });

  it('refuses a secret replaced by a short value, without logging it', async () => {
    secretValue = 'short-admin-key-1234';
    try {
      const { response, output } = await run(event('Update', { PhysicalResourceId: createResponse.PhysicalResourceId }));
      expect(response.Status).toBe('FAILED');
      expect(response.PhysicalResourceId).toBe(createResponse.PhysicalResourceId);
      expect(response.Reason).toContain(`fewer than ${MIN_ADMIN_KEY_LENGTH} characters`);
      expect(JSON.stringify(response)).not.toContain(secretValue);
      expect(output).not.toContain(secretValue);
      expect(await findKeyBySecret(secretValue)).toBeUndefined();
    } finally {
      secretValue = SECRET;
    }
  });

  it('fails on a resource without SecretArn', async () => {
    const { response } = await run(event('Create', { ResourceProperties: { ServiceToken: 'x' } }));
    expect(response).toMatchObject({ Status: 'FAILED', Reason: expect.stringContaining('no SecretArn') });
  });

  it('exports the Lambda entry', () => {
    expect(typeof deployedHandler).toBe('function');
  });
});
