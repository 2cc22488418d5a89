import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startTestGateway } from '../support/gateway';

/**
 * Cross-origin calls with a list of allowed origins (`CORS_ALLOWED_ORIGINS`); the default,
 * any origin, is driven from a real browser in test/browser/cors.test.ts.
 */
const ALLOWED = 'https://app.example.com';
const OTHER = 'https://elsewhere.example.net';

let gw: LocalGateway;
beforeAll(async () => {
  gw = await startTestGateway({ env: { CORS_ALLOWED_ORIGINS: `${ALLOWED}, https://second.example.com` } });
});
afterAll(async () => {
  await gw?.stop();
});

const preflight = (path: string, origin: string, requestMethod: string | null = 'POST') =>
  fetch(gw.url + path, {
    method: 'OPTIONS',
    headers: {
      origin,
      ...(requestMethod ? { 'access-control-request-method': requestMethod } : {}),
      'access-control-request-headers': 'content-type, x-gateway-api-key',
    },
  });

describe('CORS with a list of allowed origins', () => {
  it('answers a preflight from a listed origin before any key is checked', async () => {
    for (const path of ['/v1/chat/completions', '/v1/workspaces', '/v1beta/models/gemini-2.0-flash:generateContent', '/v1/no/such/route']) {
      const res = await preflight(path, ALLOWED);
      expect(res.status, path).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe(ALLOWED);
      expect(res.headers.get('access-control-allow-methods')).toBe('GET, POST, PUT, PATCH, DELETE');
      expect(res.headers.get('access-control-allow-headers')).toBe('content-type, x-gateway-api-key');
      expect(res.headers.get('access-control-max-age')).toBe('7200');
      expect(res.headers.get('vary')).toContain('origin');
      expect(await res.text()).toBe('');
    }
  });

  it('gives an origin that is not listed nothing: its preflight is an ordinary unauthenticated request', async () => {
    const res = await preflight('/v1/chat/completions', OTHER);
    expect(res.status).toBe(401);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('missing_api_key');
  });

  it('an OPTIONS request that is not a preflight is routed as any other', async () => {
    const res = await preflight('/v1/workspaces', ALLOWED, null);
    expect(res.status).toBe(401);
  });

  it('marks answers readable by a listed origin only, errors included, and says they vary by origin', async () => {
    const ok = await fetch(`${gw.url}/v1/workspaces`, { headers: { origin: ALLOWED, 'x-gateway-api-key': gw.adminKey } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    expect(ok.headers.get('access-control-expose-headers')).toBe('*');
    expect(ok.headers.get('vary')).toContain('origin');

    const denied = await fetch(`${gw.url}/v1/workspaces`, { headers: { origin: 'https://second.example.com' } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe('https://second.example.com');

    const other = await fetch(`${gw.url}/v1/workspaces`, { headers: { origin: OTHER, 'x-gateway-api-key': gw.adminKey } });
    expect(other.status).toBe(200);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();

    const noOrigin = await fetch(`${gw.url}/v1/workspaces`, { headers: { 'x-gateway-api-key': gw.adminKey } });
    expect(noOrigin.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('never allows credentials, and the console (same origin as the API) gets no CORS headers', async () => {
    const res = await fetch(`${gw.url}/v1/workspaces`, { headers: { origin: ALLOWED, 'x-gateway-api-key': gw.adminKey } });
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    const consolePreflight = await preflight('/console/', ALLOWED, 'GET');
    expect(consolePreflight.headers.get('access-control-allow-origin')).toBeNull();
    const page = await fetch(`${gw.url}/console/`, { headers: { origin: ALLOWED } });
    expect(page.status).toBe(200);
    expect(page.headers.get('access-control-allow-origin')).toBeNull();
  });
});
