import { createServer, type Server } from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { type FakeServer, startOpenAIFake } from '../fakes';
import { launchChromium } from '../support/chromium';
import { startTestGateway } from '../support/gateway';

/**
 * A web page on another origin calls the gateway from a real browser (Debian's Chromium,
 * as in console.test.ts), the way an app using the OpenAI SDK with `dangerouslyAllowBrowser`
 * does: JSON with the gateway key in a header, so Chromium sends a preflight first and then
 * reads the answer only if the gateway allows it. Default settings: any origin.
 */

let gw: LocalGateway;
let fake: FakeServer;
let app: Server;
let appOrigin: string;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  [gw, fake] = await Promise.all([startTestGateway(), startOpenAIFake()]);
  app = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>app</title>'));
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  // Another port is another origin; `localhost` makes it another host name too.
  appOrigin = `http://localhost:${(app.address() as { port: number }).port}`;
  browser = await launchChromium();
  page = await browser.newPage();
  await page.goto(`${appOrigin}/`);
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => app?.close(r));
  await Promise.all([gw?.stop(), fake?.close()]);
});

interface PageResult {
  status: number;
  text: string;
  trace: string | null;
  error?: string;
}

/** A fetch made by the page (its origin, its CORS rules), as an SDK in the browser makes it. */
function fetchFromPage(stream: boolean, key: string): Promise<PageResult> {
  return page.evaluate(
    async ({ url, key, upstream, stream }) => {
      try {
        const res = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-gateway-api-key': key,
            'x-gateway-provider': 'openai',
            'x-gateway-custom-host': upstream,
            authorization: 'Bearer sk-browser-test',
          },
          body: JSON.stringify({ model: 'gpt-4o-mini', stream, messages: [{ role: 'user', content: 'Say hello from the browser' }] }),
        });
        return { status: res.status, text: await res.text(), trace: res.headers.get('x-gateway-trace-id') };
      } catch (err) {
        return { status: 0, text: '', trace: null, error: String(err) };
      }
    },
    { url: gw.url, key, upstream: `${fake.url}/v1`, stream },
  );
}

describe('a page on another origin calls the gateway', () => {
  it('a chat completion: the preflight passes, the answer and its headers can be read', async () => {
    const result = await fetchFromPage(false, gw.adminKey);
    expect(result.error).toBeUndefined();
    expect(result.status, result.text).toBe(200);
    expect(JSON.parse(result.text).choices[0].message.content).toEqual(expect.any(String));
    expect(result.trace).toMatch(/^log_/);
  });

  it('a streamed chat completion is read event by event', async () => {
    const result = await fetchFromPage(true, gw.adminKey);
    expect(result.status, result.text).toBe(200);
    const events = result.text.split('\n\n').filter((e) => e.startsWith('data: '));
    expect(events.length).toBeGreaterThan(2);
    expect(events.at(-1)).toBe('data: [DONE]');
  });

  it('an error (a wrong gateway key) can be read too, in the OpenAI error shape', async () => {
    const result = await fetchFromPage(false, 'gwk_wrong');
    expect(result.status).toBe(401);
    expect(JSON.parse(result.text).error.code).toBe('invalid_api_key');
  });
});
