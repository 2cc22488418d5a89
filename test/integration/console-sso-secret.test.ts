import { OAuth2Server } from 'oauth2-mock-server';
import { afterAll, beforeAll, describe, expect, it, type MockInstance, vi } from 'vitest';
import { signConsoleToken } from '../../functions/console/issue';
import { AwsJsonError, startAwsJsonServer } from '../../infra/local/aws-json-server';
import type { LocalGateway } from '../../infra/local/server';
import { call, startTestGateway } from '../support/gateway';

/**
 * Single sign-on with a confidential client (docs/console-sso.md): the client secret lives
 * in Secrets Manager (SSO_CLIENT_SECRET_ARN), here a local fake speaking its AWS JSON 1.1
 * protocol. While the fake refuses, login and callback answer a clear 503 in the OpenAI
 * error shape; once it answers, the gateway authenticates to the issuer's token endpoint
 * with that secret, reads it once per container, and the secret never reaches a log line.
 */
const SECRET = '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';
const SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:ai-gateway/console-sso-AbC123';
const SET_ENV = ['SSO_ISSUER_URL', 'SSO_CLIENT_ID', 'SSO_CLIENT_SECRET_ARN', 'SSO_ROLE_MAP', 'AWS_ENDPOINT_URL_SECRETS_MANAGER'];

let gw: LocalGateway;
let issuer: OAuth2Server;
let secretsManager: { endpoint: string; stop: () => Promise<void> };
/** How the fake Secrets Manager answers GetSecretValue. */
let mode: 'deny' | 'binary' | 'ok' = 'deny';
const secretRequests: unknown[] = [];
/** The client secret each token request to the issuer presented. */
const presented: Array<string | undefined> = [];
const output: string[] = [];
let spies: MockInstance[] = [];

/** The client_secret_post secret of a token request; `Basic` when it came (also) as HTTP Basic, which openid-client form-encodes first. */
function presentedSecret(req: { headers: Record<string, unknown>; body?: Record<string, unknown> }): string | undefined {
  if (req.headers.authorization !== undefined) return 'Basic';
  return typeof req.body?.client_secret === 'string' ? req.body.client_secret : undefined;
}

beforeAll(async () => {
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream) as (chunk: string | Uint8Array) => boolean;
    spies.push(
      vi.spyOn(stream, 'write').mockImplementation((chunk: string | Uint8Array) => {
        output.push(String(chunk));
        return write(chunk);
      }),
    );
  }
  secretsManager = await startAwsJsonServer({
    service: 'fake Secrets Manager',
    targetPrefix: 'secretsmanager.',
    contentType: 'application/x-amz-json-1.1',
    operations: {
      GetSecretValue: (input) => {
        secretRequests.push(input.SecretId);
        if (mode === 'deny') {
          throw new AwsJsonError('AccessDeniedException', `User is not authorized to perform: secretsmanager:GetSecretValue on resource: ${SECRET_ARN}`);
        }
        if (mode === 'binary') return { ARN: SECRET_ARN, Name: 'ai-gateway/console-sso', SecretBinary: Buffer.from(SECRET).toString('base64') };
        return { ARN: SECRET_ARN, Name: 'ai-gateway/console-sso', SecretString: `${SECRET}\n`, VersionId: 'v1' };
      },
    },
  });
  issuer = new OAuth2Server();
  await issuer.issuer.keys.generate('RS256');
  await issuer.start(0, '127.0.0.1');
  issuer.service.on('beforeTokenSigning', (token, req) => {
    presented.push(presentedSecret(req as never));
    Object.assign(token.payload, { sub: 'u-confidential', email: 'grace@example.test', groups: ['gw-admins'] });
  });
  delete process.env.SSO_CLIENT_SECRET;
  gw = await startTestGateway({
    env: {
      SSO_ISSUER_URL: issuer.issuer.url!,
      SSO_CLIENT_ID: 'gateway-console',
      SSO_CLIENT_SECRET_ARN: SECRET_ARN,
      SSO_ROLE_MAP: JSON.stringify({ 'gw-admins': 'org-admin' }),
      AWS_ENDPOINT_URL_SECRETS_MANAGER: secretsManager.endpoint,
    },
  });
}, 60_000);

afterAll(async () => {
  for (const spy of spies) spy.mockRestore();
  spies = [];
  await gw?.stop();
  await issuer?.stop();
  await secretsManager?.stop();
  for (const name of SET_ENV) delete process.env[name];
});

const cookieOf = (res: Response, name: string) => new RegExp(`^(${name}=[^;]+)`).exec(res.headers.get('set-cookie') ?? '')?.[1];

async function expectSecretUnavailable(res: Response): Promise<void> {
  expect(res.status).toBe(503);
  expect(res.headers.get('set-cookie')).toBeNull();
  const body = (await res.json()) as { error: { message: string; type: string; param: unknown; code: string } };
  expect(body.error).toEqual({
    message: expect.stringContaining('client secret from Secrets Manager (SSO_CLIENT_SECRET_ARN)'),
    type: 'server_error',
    param: null,
    code: 'sso_client_secret_unavailable',
  });
}

const logLines = () =>
  output
    .join('')
    .split('\n')
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });

describe('console single sign-on with a client secret in Secrets Manager', () => {
  it('answers 503 on login while the secret cannot be read, and logs why (not the value)', async () => {
    mode = 'deny';
    await expectSecretUnavailable(await fetch(`${gw.url}/console/sso/login`, { redirect: 'manual' }));
    // A failure is not kept: the next sign-in asks again.
    await expectSecretUnavailable(await fetch(`${gw.url}/console/sso/login`, { redirect: 'manual' }));
    expect(secretRequests).toEqual([SECRET_ARN, SECRET_ARN]);
    const logged = logLines().filter((l) => l.message === 'sso client secret unavailable');
    expect(logged.length).toBe(2);
    expect(logged[0]).toMatchObject({ level: 'ERROR', secret_arn: SECRET_ARN, error: 'AccessDeniedException', status: 400 });

    mode = 'binary';
    await expectSecretUnavailable(await fetch(`${gw.url}/console/sso/login`, { redirect: 'manual' }));
    expect(logLines().filter((l) => l.message === 'sso client secret unavailable')[2]).toMatchObject({
      detail: expect.stringContaining('no SecretString'),
    });
  });

  it('answers 503 on a callback whose login ran in a container that could read it', async () => {
    mode = 'deny';
    // The transaction a login elsewhere would have set (same signing keys, as across Lambda containers).
    const tx = await signConsoleToken(
      { verifier: 'v'.repeat(43), state: 'state-from-another-container', nonce: 'nonce-0000000000000000' },
      'ai-gateway-console-sso',
      Math.floor(Date.now() / 1000) + 600,
    );
    const res = await fetch(`${gw.url}/console/sso/callback?code=abc&state=state-from-another-container`, {
      redirect: 'manual',
      headers: { cookie: `gw_console_sso=${tx}` },
    });
    await expectSecretUnavailable(res);
  });

  it('signs in with the secret from Secrets Manager, read once per container', async () => {
    mode = 'ok';
    const before = secretRequests.length;
    for (let i = 0; i < 2; i++) {
      const login = await fetch(`${gw.url}/console/sso/login`, { redirect: 'manual' });
      expect(login.status, await login.clone().text()).toBe(302);
      const atIssuer = await fetch(new URL(login.headers.get('location')!), { redirect: 'manual' });
      const callback = new URL(atIssuer.headers.get('location')!);
      const done = await fetch(`${gw.url}${callback.pathname}${callback.search}`, {
        redirect: 'manual',
        headers: { cookie: cookieOf(login, 'gw_console_sso')! },
      });
      expect(done.status, await done.clone().text()).toBe(302);
      const session = await call(gw, 'GET', '/console/session', { key: null, headers: { cookie: cookieOf(done, 'gw_console')! } });
      expect(session.status, session.text).toBe(200);
      expect(session.body).toMatchObject({ kind: 'sso', role: 'org-admin', email: 'grace@example.test' });
    }
    // The token endpoint saw the stored secret in its form (client_secret_post), trimmed of the newline a CLI upload leaves.
    expect(presented.slice(-2)).toEqual([SECRET, SECRET]);
    expect(secretRequests.length - before).toBe(1);
  });

  it('never wrote the secret to a log line', async () => {
    expect(output.join('')).not.toContain(SECRET);
    // Not vacuous: the capture saw the gateway's lines, the failures among them.
    expect(logLines().some((l) => l.message === 'sso client secret unavailable')).toBe(true);
  });
});
