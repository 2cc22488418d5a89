import { AwsServiceError, createAwsJsonClient, SECRETS_MANAGER, type AwsJsonClient } from '../../shared/aws/json-client';
import type { SsoSettings } from '../../shared/config';
import { GatewayError } from '../../shared/errors';
import { log, type LogContext } from '../../shared/telemetry/logger';

/**
 * The client secret of a confidential OIDC client (Google's web clients; Okta and Entra
 * apps with a secret): SSO_CLIENT_SECRET when set (locally), else the SecretString of the
 * Secrets Manager secret SSO_CLIENT_SECRET_ARN names (on AWS), read once per container and
 * again only after a failure. Neither the value nor a response that might hold it is logged.
 */
let secretsManager: AwsJsonClient | undefined;
let fetched: { arn: string; value: Promise<string> } | undefined;

async function getSecretString(arn: string): Promise<string> {
  secretsManager ??= createAwsJsonClient(SECRETS_MANAGER);
  const { SecretString } = await secretsManager.send<{ SecretString?: unknown }>('GetSecretValue', { SecretId: arn });
  const secret = typeof SecretString === 'string' ? SecretString.trim() : '';
  if (!secret) throw new Error('the secret has no SecretString (store the client secret as plain text)');
  return secret;
}

/** What may be logged of a failure: a service's own error (which never carries the value), else only the error's name. */
function describeFailure(err: unknown): Record<string, unknown> {
  if (err instanceof AwsServiceError) return { error: err.name, status: err.$metadata.httpStatusCode, detail: err.message };
  // A parse error quotes the response body, which may hold the secret: keep its name only.
  if (!(err instanceof Error) || err instanceof SyntaxError) return { error: err instanceof Error ? err.name : 'unknown' };
  const { code } = err as { code?: unknown };
  return typeof code === 'string' ? { error: err.name, code } : { error: err.name, detail: err.message };
}

/** The client secret to authenticate to the issuer's token endpoint with; undefined: a public client (PKCE only). */
export async function clientSecretOf(settings: SsoSettings, ctx?: LogContext): Promise<string | undefined> {
  if (settings.clientSecret) return settings.clientSecret;
  const arn = settings.clientSecretArn;
  if (!arn) return undefined;
  if (fetched?.arn !== arn) {
    const value = getSecretString(arn);
    value.catch(() => {
      if (fetched?.value === value) fetched = undefined;
    });
    fetched = { arn, value };
  }
  try {
    return await fetched.value;
  } catch (err) {
    log.error('sso client secret unavailable', { secret_arn: arn, ...describeFailure(err) }, ctx);
    throw new GatewayError(
      503,
      'server_error',
      "Single sign-on is unavailable: the gateway could not read its client secret from Secrets Manager (SSO_CLIENT_SECRET_ARN); an operator should check the secret and the function's access to it.",
      null,
      'sso_client_secret_unavailable',
    );
  }
}
