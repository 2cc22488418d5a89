/**
 * IBM Cloud IAM: an API key is exchanged for a bearer token (`POST {iam}/identity/token`,
 * form body `grant_type=urn:ibm:params:oauth:grant-type:apikey&apikey=<key>`, answer
 * `{access_token, expires_in, expiration}`; tokens live about an hour). Tokens are cached
 * per (IAM URL, key) in the container until a minute before they expire, and concurrent
 * requests for the same key share one exchange. The key itself is never a cache key: only
 * its SHA-256 is kept.
 *
 * Source: https://cloud.ibm.com/docs/iam?topic=iam-iamtoken_from_apikey
 */
import { createHash } from 'node:crypto';
import { config } from '../../shared/config';
import { GatewayError, unauthorized } from '../../shared/errors';
import { readBody, sendUpstream } from '../../shared/net/http-client';

export const DEFAULT_IAM_URL = 'https://iam.cloud.ibm.com/identity/token';

/** A token this close to its expiry (seconds) is exchanged again. */
const REFRESH_MARGIN_S = 60;
const MAX_CACHED = 256;
const MAX_BODY = 64 * 1024;

interface Token {
  value: string;
  /** Unix seconds. */
  expiresAt: number;
}

const cached = new Map<string, Token>();
const pending = new Map<string, Promise<Token>>();

/** A bearer token for the key, from the cache or a fresh exchange at `iamUrl`. */
export async function iamToken(apiKey: string, iamUrl: string = DEFAULT_IAM_URL): Promise<string> {
  const id = createHash('sha256').update(iamUrl).update('\0').update(apiKey).digest('base64url');
  const hit = cached.get(id);
  if (hit && hit.expiresAt - REFRESH_MARGIN_S > Date.now() / 1000) return hit.value;
  let exchange = pending.get(id);
  if (!exchange) {
    exchange = exchangeKey(apiKey, iamUrl).finally(() => pending.delete(id));
    pending.set(id, exchange);
  }
  const token = await exchange;
  cached.delete(id);
  cached.set(id, token);
  // Oldest first: a Map iterates in insertion order.
  while (cached.size > MAX_CACHED) cached.delete(cached.keys().next().value!);
  return token.value;
}

async function exchangeKey(apiKey: string, iamUrl: string): Promise<Token> {
  const res = await sendUpstream({
    url: iamUrl,
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({ grant_type: 'urn:ibm:params:oauth:grant-type:apikey', apikey: apiKey }).toString(),
    timeoutMs: config().defaultUpstreamTimeoutMs,
    trustedHosts: config().trustedHosts,
    param: 'x-gateway-watsonx-iam-url',
  });
  const text = (await readBody(res.body, MAX_BODY)).toString('utf8');
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // handled below: no access_token
  }
  if (res.status === 400 || res.status === 401) {
    const why = typeof body.errorMessage === 'string' ? `: ${body.errorMessage}` : '';
    throw unauthorized(`IBM Cloud IAM refused the API key${why}`);
  }
  if (res.status >= 300 || typeof body.access_token !== 'string') {
    throw new GatewayError(
      res.status >= 400 ? res.status : 502,
      'upstream_error',
      `IBM Cloud IAM did not issue a token (HTTP ${res.status}).`,
      null,
      'iam_token_failed',
    );
  }
  const now = Date.now() / 1000;
  const expiresAt =
    typeof body.expiration === 'number' ? body.expiration : typeof body.expires_in === 'number' ? now + body.expires_in : now + REFRESH_MARGIN_S;
  return { value: body.access_token, expiresAt };
}
