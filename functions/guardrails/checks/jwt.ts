import { createRemoteJWKSet, customFetch, errors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { config } from '../../shared/config';
import { readBody, sendUpstream } from '../../shared/net/http-client';
import { assertSafeUrl } from '../../shared/net/ssrf';
import { z } from '../../shared/validation';
import { defineCheck } from './types';
import { BoundedMap } from './util';

/**
 * `default.jwt`: verifies the JWT in the request header `headerKey` ("Bearer " stripped)
 * against the key set at `jwksUri` with jose: signature with one of `algorithms`, `exp` /
 * `nbf` with `clockTolerance` seconds of slack, and `iat` no older than `maxTokenAge`
 * (duration text such as "1h", "30 minutes", "2 days"). A missing or invalid token fails
 * the check; a key set that cannot be fetched is an error (see `failOnError`).
 *
 * Key sets are cached per `jwksUri` (and `cacheMaxAge`) for `cacheMaxAge` seconds. The
 * SSRF guard covers the key set: `assertSafeUrl(jwksUri)` runs before every use, and jose
 * fetches through the gateway's own client (jose's `customFetch` -> sendUpstream), so the
 * host's addresses are vetted at connect time and redirects are never followed.
 * Tokens are never logged nor put into results.
 */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'] as const;
const DURATION = /^(\d+|\d+\.\d+) ?(seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d|weeks?|w|years?|yrs?|y)$/i;
const MAX_JWKS_BYTES = 512 * 1024;
const JWKS_TIMEOUT_MS = 5000;

/** jose error codes that mean "this token is not acceptable" (a verdict, not an error). */
const TOKEN_REJECTIONS = new Set([
  'ERR_JWT_EXPIRED',
  'ERR_JWT_CLAIM_VALIDATION_FAILED',
  'ERR_JWT_INVALID',
  'ERR_JWS_INVALID',
  'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
  'ERR_JOSE_ALG_NOT_ALLOWED',
  'ERR_JOSE_NOT_SUPPORTED',
  'ERR_JWKS_NO_MATCHING_KEY',
  'ERR_JWKS_MULTIPLE_MATCHING_KEYS',
]);

const httpUrl = z.string().check(
  z.maxLength(2048),
  z.refine((v) => {
    try {
      const u = new URL(v);
      return (u.protocol === 'http:' || u.protocol === 'https:') && u.username === '' && u.password === '';
    } catch {
      return false;
    }
  }, 'expected an absolute http(s) URL without credentials'),
);

const keySets = new BoundedMap<string, JWTVerifyGetKey>(100);

/** jose's fetch, routed through the SSRF-guarded client of the gateway. */
function guardedFetch(trustedHosts: readonly string[] | undefined) {
  return async (url: string, options: { headers: Headers; signal: AbortSignal }): Promise<Response> => {
    const res = await sendUpstream({
      method: 'GET',
      url,
      headers: Object.fromEntries(options.headers),
      signal: options.signal,
      timeoutMs: JWKS_TIMEOUT_MS,
      trustedHosts,
      param: 'jwksUri',
    });
    const body = await readBody(res.body, MAX_JWKS_BYTES);
    return new Response(res.status === 204 || res.status === 304 ? null : body, { status: res.status });
  };
}

function keySetFor(jwksUri: URL, cacheMaxAge: number, trustedHosts: readonly string[] | undefined): JWTVerifyGetKey {
  const key = [jwksUri.href, cacheMaxAge, trustedHosts?.join(',') ?? ''].join('\u0000');
  let set = keySets.get(key);
  if (!set) {
    set = createRemoteJWKSet(jwksUri, {
      cacheMaxAge: cacheMaxAge * 1000,
      timeoutDuration: JWKS_TIMEOUT_MS,
      [customFetch]: guardedFetch(trustedHosts),
    });
    keySets.set(key, set);
  }
  return set;
}

/** Forget every cached key set (tests). */
export function clearJwksCache(): void {
  keySets.clear();
}

export const jwt = defineCheck({
  id: 'default.jwt',
  parameters: z.strictObject({
    jwksUri: httpUrl,
    headerKey: z.string().check(z.regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/, 'expected an HTTP header name')),
    algorithms: z._default(z.array(z.enum(ALGORITHMS)).check(z.minLength(1)), ['RS256']),
    cacheMaxAge: z._default(z.int().check(z.gte(0), z.lte(31_536_000)), 86_400),
    clockTolerance: z._default(z.int().check(z.gte(0), z.lte(86_400)), 5),
    maxTokenAge: z._default(z.string().check(z.regex(DURATION, 'expected a duration such as "30s", "15 minutes", "1h" or "2 days"')), '1d'),
  }),
  async run(input, params, ctx) {
    const raw = input.request.headers[params.headerKey.toLowerCase()]?.trim();
    const token = raw?.replace(/^Bearer\s+/i, '').trim();
    if (!token) return { verdict: false, explanation: `No token in the \`${params.headerKey}\` header.` };
    const url = assertSafeUrl(params.jwksUri, { trustedHosts: ctx.trustedHosts ?? config().trustedHosts, param: 'jwksUri' });
    try {
      await jwtVerify(token, keySetFor(url, params.cacheMaxAge, ctx.trustedHosts), {
        algorithms: [...params.algorithms],
        clockTolerance: params.clockTolerance,
        maxTokenAge: params.maxTokenAge,
      });
    } catch (err) {
      if (err instanceof errors.JOSEError && TOKEN_REJECTIONS.has(err.code)) {
        return { verdict: false, explanation: `The token was rejected: ${err.message}`, data: { code: err.code } };
      }
      throw err;
    }
    return { verdict: true, explanation: 'The token is valid.' };
  },
});
