import * as client from 'openid-client';
import { config, type SsoSettings } from '../../shared/config';
import { isTrustedHost } from '../../shared/net/ssrf';
import { readBody, sendUpstream } from '../../shared/net/http-client';

/**
 * The OpenID Connect client of the console's single sign-on (openid-client): discovery of
 * the issuer by URL, then authorization code + PKCE + state + nonce. Every request it makes
 * (discovery, JWKS, token) goes through the gateway's upstream client, so the SSRF rules of
 * custom hosts apply to the issuer too unless its host is in GATEWAY_TRUSTED_HOSTS; plain
 * http is allowed only for such a trusted host (a local test issuer).
 */
const OIDC_TIMEOUT_MS = 10_000;
const MAX_OIDC_RESPONSE_BYTES = 1024 * 1024;

const NULL_BODY_STATUS = new Set([101, 204, 205, 304]);

const guardedFetch: client.CustomFetch = async (url, options) => {
  const res = await sendUpstream({
    url,
    method: options.method as 'GET' | 'POST',
    headers: options.headers,
    ...(options.body !== undefined && options.body !== null ? { body: String(options.body) } : {}),
    timeoutMs: OIDC_TIMEOUT_MS,
    param: 'SSO_ISSUER_URL',
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const body = await readBody(res.body, MAX_OIDC_RESPONSE_BYTES);
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    // The body is already decoded and whole: its transfer headers no longer apply.
    if (name === 'content-encoding' || name === 'content-length' || name === 'transfer-encoding') continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return new Response(NULL_BODY_STATUS.has(res.status) ? null : body, { status: res.status, headers });
};

let discovered: { issuer: string; value: Promise<client.Configuration> } | undefined;

/** The issuer's configuration, discovered once per container (again after a failure). */
export function oidcConfiguration(settings: SsoSettings): Promise<client.Configuration> {
  const issuer = settings.issuerUrl!;
  if (discovered?.issuer === issuer) return discovered.value;
  const url = new URL(issuer);
  const insecure = url.protocol === 'http:' && isTrustedHost(url.hostname, config().trustedHosts);
  const value = client
    .discovery(url, settings.clientId!, settings.clientSecret, settings.clientSecret ? client.ClientSecretPost(settings.clientSecret) : client.None(), {
      [client.customFetch]: guardedFetch,
      ...(insecure ? { execute: [client.allowInsecureRequests] } : {}),
    })
    .then((configuration) => {
      configuration[client.customFetch] = guardedFetch;
      return configuration;
    });
  value.catch(() => {
    if (discovered?.value === value) discovered = undefined;
  });
  discovered = { issuer, value };
  return value;
}

export { client };
