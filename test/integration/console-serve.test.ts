import { type IncomingHttpHeaders, request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { readConsoleBuild } from '../../infra/console-build';
import { groupForPath } from '../../infra/endpoint-groups';
import { errorOf, startTestGateway } from '../support/gateway';

let gw: LocalGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw?.stop();
});

const get = (path: string, headers: Record<string, string> = {}) => fetch(gw.url + path, { headers, redirect: 'manual' });

/** A GET with the path sent exactly as written (fetch would resolve `..` first) and the body as received. */
function rawGet(path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(gw.url, { path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the console is served by the admin group at /console/', () => {
  it('routes /console and everything under it to the admin group', () => {
    expect(groupForPath('/console')).toBe('admin');
    expect(groupForPath('/console/assets/index-x.js')).toBe('admin');
    expect(groupForPath('/consoles')).toBe('gateway');
  });

  it('answers the app without a key, with a strict CSP, nosniff, no framing and no caching of index.html', async () => {
    const res = await get('/console/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    const html = await res.text();
    // No inline script: every script element names its file.
    for (const tag of html.match(/<script\b[^>]*>/g) ?? []) expect(tag).toMatch(/\ssrc="\.\/assets\/[^"]+\.js"/);
    expect(html).not.toMatch(/<script\b[^>]*>[^<]+<\/script>/);
  });

  it('redirects /console to /console/ with a relative location (it holds under a stage path)', async () => {
    const res = await get('/console');
    expect(res.status).toBe(308);
    expect(res.headers.get('location')).toBe('console/');
  });

  it('serves hashed assets for a year, with their content types, gzipped when asked', async () => {
    const html = await (await get('/console/')).text();
    const script = html.match(/src="\.\/(assets\/[^"]+\.js)"/)![1]!;
    const style = html.match(/href="\.\/(assets\/[^"]+\.css)"/)![1]!;
    const js = await get(`/console/${script}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(js.headers.get('x-content-type-options')).toBe('nosniff');
    expect((await get(`/console/${style}`)).headers.get('content-type')).toBe('text/css; charset=utf-8');
    const plain = await rawGet(`/console/${script}`);
    expect(plain.headers['content-encoding']).toBeUndefined();
    const gzipped = await rawGet(`/console/${script}`, { 'accept-encoding': 'gzip, deflate' });
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gzipped.body).equals(plain.body)).toBe(true);
  });

  it('answers only the built files: an unknown name or a path outside the build is a JSON 404', async () => {
    for (const path of [
      '/console/nope.js',
      '/console/../package.json',
      '/console/%2e%2e/%2e%2e/package.json',
      '/console/assets/../../serve.ts',
      '/console/.build.json',
    ]) {
      const res = await rawGet(path);
      const text = res.body.toString();
      expect(res.status, path).toBe(404);
      expect(errorOf({ status: res.status, headers: new Headers(), body: JSON.parse(text), text }).type, path).toBe('not_found_error');
    }
  });

  it('keeps the API closed: a /v1 route without a key is still a 401, and writes to /console are refused', async () => {
    expect((await get('/v1/api-keys')).status).toBe(401);
    const post = await fetch(`${gw.url}/console/`, { method: 'POST' });
    expect([401, 405]).toContain(post.status);
  });

  it('stays within its budget of 200 KB gzipped', () => {
    const build = readConsoleBuild()!;
    expect(build.gzipBytes).toBeGreaterThan(1000);
    expect(build.gzipBytes).toBeLessThan(200 * 1024);
  });
});
