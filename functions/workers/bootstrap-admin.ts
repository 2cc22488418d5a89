import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { CloudFormationCustomResourceEvent, Context } from 'aws-lambda';
import { bootstrap, type BootstrapResult } from '../admin/bootstrap';
import { regionalEndpoint } from '../shared/aws/json-client';
import { signHeaders, type AwsCredentials } from '../shared/aws/sigv4';
import { awsEnvCredentials, config } from '../shared/config';
import { log } from '../shared/telemetry/logger';

/**
 * Deploy-time bootstrap on AWS: the custom resource of the bootstrap stack
 * (infra/stacks/bootstrap-stack.ts).
 *
 * Secrets Manager generates the admin key (the secret's GenerateSecretString), so the key
 * never passes through CloudFormation: the template and the custom resource's properties
 * hold only the secret's ARN. On Create and Update this function reads the secret and calls
 * `bootstrap(secret)` (functions/admin/bootstrap.ts), which creates the organisation, the
 * default workspace and the key's SHA-256 record once, and on later calls only checks that
 * the key is known. Delete does nothing: the tables and the secret are retained.
 *
 * The key is never logged, never put in an error message and never returned to
 * CloudFormation (the response's Data holds ids only, and NoEcho is set).
 *
 * @aws-sdk/client-secrets-manager is not a dependency of the project, so GetSecretValue is
 * one SigV4-signed HTTPS call (Secrets Manager's JSON 1.1 protocol) with the function's
 * credentials from the environment.
 */

/** Shorter generated values mean someone replaced the secret by hand with a weak one. */
export const MIN_ADMIN_KEY_LENGTH = 32;

/** Custom resource properties (the bootstrap stack sets them; all are strings in CloudFormation). */
export interface BootstrapAdminProperties {
  /** ARN of the Secrets Manager secret whose SecretString is the admin key. */
  SecretArn: string;
}

export interface CfnResponse {
  Status: 'SUCCESS' | 'FAILED';
  Reason?: string;
  PhysicalResourceId: string;
  StackId: string;
  RequestId: string;
  LogicalResourceId: string;
  NoEcho: boolean;
  Data?: Record<string, string>;
}

export interface BootstrapAdminDeps {
  readSecret(secretId: string): Promise<string>;
  bootstrap(adminSecret: string): Promise<BootstrapResult>;
  /** PUT the response to CloudFormation's pre-signed ResponseURL. */
  respond(responseUrl: string, response: CfnResponse): Promise<void>;
}

// ---- Secrets Manager: GetSecretValue -------------------------------------------------------

export interface SecretsManagerOptions {
  region: string;
  credentials: AwsCredentials;
  /** Default: the regional endpoint. Tests point it at a local server. */
  endpoint?: string;
}

export const secretsManagerEndpoint = (region: string): string => `${regionalEndpoint('secretsmanager', region)}/`;

/** GetSecretValue of the secret's current version; returns its SecretString. */
export async function getSecretValue(secretId: string, opts: SecretsManagerOptions): Promise<string> {
  const url = new URL(opts.endpoint ?? secretsManagerEndpoint(opts.region));
  const body = JSON.stringify({ SecretId: secretId });
  const headers = await signHeaders(
    { method: 'POST', url, headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': 'secretsmanager.GetSecretValue' }, body },
    { region: opts.region, service: 'secretsmanager', credentials: opts.credentials },
  );
  const res = await send(url, 'POST', headers, body);
  let parsed: { SecretString?: unknown; __type?: unknown; message?: unknown; Message?: unknown } = {};
  try {
    parsed = JSON.parse(res.body) as typeof parsed;
  } catch {
    /* reported below */
  }
  if (res.status !== 200) {
    // Error bodies carry a type and a message, never the secret's value.
    const type = typeof parsed.__type === 'string' ? parsed.__type.split('#').pop() : 'UnknownError';
    const message = typeof parsed.Message === 'string' ? parsed.Message : typeof parsed.message === 'string' ? parsed.message : '';
    throw new Error(`Secrets Manager GetSecretValue failed with HTTP ${res.status} ${type}${message ? `: ${message}` : ''}`);
  }
  if (typeof parsed.SecretString !== 'string') throw new Error('Secrets Manager GetSecretValue returned no SecretString');
  return parsed.SecretString;
}

// ---- CloudFormation response -------------------------------------------------------------

/**
 * The response protocol of CloudFormation custom resources: a PUT of the JSON document to the
 * pre-signed S3 URL, with an empty content type (what the URL was signed for).
 */
export async function putResponse(responseUrl: string, response: CfnResponse): Promise<void> {
  const body = JSON.stringify(response);
  const res = await send(new URL(responseUrl), 'PUT', { 'content-type': '', 'content-length': String(Buffer.byteLength(body)) }, body);
  if (res.status < 200 || res.status >= 300) throw new Error(`CloudFormation response PUT failed with HTTP ${res.status}`);
}

function send(url: URL, method: string, headers: Record<string, string>, body: string): Promise<{ status: number; body: string }> {
  const request = url.protocol === 'http:' ? httpRequest : httpsRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, timeout: 20_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${url.host} timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}

// ---- handler --------------------------------------------------------------------------------

/** Time kept back from the Lambda timeout so that a FAILED response always goes out. */
const RESPONSE_RESERVE_MS = 10_000;

export function createBootstrapAdminHandler(deps: BootstrapAdminDeps) {
  return async (event: CloudFormationCustomResourceEvent, context?: Pick<Context, 'getRemainingTimeInMillis' | 'logGroupName'>): Promise<CfnResponse> => {
    const base = { StackId: event.StackId, RequestId: event.RequestId, LogicalResourceId: event.LogicalResourceId, NoEcho: true };
    const previousId = event.RequestType === 'Create' ? undefined : event.PhysicalResourceId;
    let response: CfnResponse;
    try {
      if (event.RequestType === 'Delete') {
        // Nothing to undo: the control table and the secret are retained (docs/deploy.md, "Tear down").
        response = { ...base, Status: 'SUCCESS', PhysicalResourceId: event.PhysicalResourceId };
      } else {
        const secretArn = (event.ResourceProperties as unknown as Partial<BootstrapAdminProperties>).SecretArn;
        if (typeof secretArn !== 'string' || secretArn === '') throw new Error('The custom resource has no SecretArn property');
        const budget = (context?.getRemainingTimeInMillis() ?? 120_000) - RESPONSE_RESERVE_MS;
        const result = await withDeadline(
          (async () => {
            const secret = await deps.readSecret(secretArn);
            if (secret.length < MIN_ADMIN_KEY_LENGTH) {
              throw new Error(`The admin key secret holds fewer than ${MIN_ADMIN_KEY_LENGTH} characters; refusing to register it`);
            }
            return deps.bootstrap(secret);
          })(),
          budget,
        );
        const created = result.createdSecret !== undefined;
        log.info(created ? 'bootstrap admin key registered' : 'bootstrap admin key already registered', {
          request_type: event.RequestType,
          organisation_id: result.organisationId,
          workspace_id: result.workspace.id,
        });
        response = {
          ...base,
          Status: 'SUCCESS',
          PhysicalResourceId: previousId ?? `ai-gateway-bootstrap-${result.organisationId}`,
          Data: { OrganisationId: result.organisationId, WorkspaceId: result.workspace.id, AdminKeyCreated: String(created) },
        };
      }
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      log.error('bootstrap custom resource failed', { request_type: event.RequestType, error: message });
      response = {
        ...base,
        Status: 'FAILED',
        Reason: `${message}${context?.logGroupName ? ` (log group ${context.logGroupName})` : ''}`.slice(0, 1000),
        // A failed Create has no resource yet; CloudFormation then sends a Delete with this id.
        PhysicalResourceId: previousId ?? `ai-gateway-bootstrap-failed-${event.RequestId}`,
      };
    }
    await deps.respond(event.ResponseURL, response);
    return response;
  };
}

function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`bootstrap did not finish within ${Math.round(ms / 1000)} s`)), Math.max(ms, 1_000));
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

export const handler = createBootstrapAdminHandler({
  readSecret: (secretId) => getSecretValue(secretId, { region: config().region, credentials: awsEnvCredentials() }),
  bootstrap,
  respond: putResponse,
});
