import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { OAuth2Server } from 'oauth2-mock-server';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { type FakeServer, startOpenAIFake } from '../fakes';
import { launchChromium } from '../support/chromium';
import { call, startTestGateway } from '../support/gateway';

/**
 * The console in a real browser: Debian's Chromium (CHROMIUM_PATH, default
 * /usr/bin/chromium; .ci/run installs it) driven by playwright-core, against one local
 * gateway and a fake OpenAI upstream. Screenshots of every page go to test-artifacts/console/.
 */
const ARTIFACTS = resolve(import.meta.dirname, '../../test-artifacts/console');
const PAGES = ['overview', 'logs', 'keys', 'providers', 'configs', 'guardrails', 'policies', 'prompts', 'assistants', 'fine-tuning', 'more'];
/** A prompt that would run script if any of it were parsed as HTML. */
const HOSTILE = "<script>window.__xss = 'script'</script><img src=x onerror=window.__xss=1;alert(1)>";
const BOUND = { timeout: 20_000 };

let gw: LocalGateway;
let fake: FakeServer;
let browser: Browser;
/** A local OpenID Connect issuer for the single-sign-on path; its users are in the group `auditors`. */
let issuer: OAuth2Server;
let page: Page;
const dialogs: string[] = [];
const outsideRequests: string[] = [];

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  issuer = new OAuth2Server();
  await issuer.issuer.keys.generate('RS256');
  await issuer.start(0, '127.0.0.1');
  issuer.service.on('beforeTokenSigning', (token) => {
    Object.assign(token.payload, { sub: 'u-auditor', email: 'auditor@example.test', groups: ['auditors'] });
  });
  // Keys are checked at every call (no AUTH_CACHE_TTL_MS delay), so a revoked key fails at once.
  [gw, fake] = await Promise.all([
    startTestGateway({
      env: {
        AUTH_CACHE_TTL_MS: '0',
        SSO_ISSUER_URL: issuer.issuer.url!,
        SSO_CLIENT_ID: 'gateway-console',
        SSO_LABEL: 'Test issuer',
        SSO_ROLE_MAP: JSON.stringify({ auditors: 'viewer' }),
      },
    }),
    startOpenAIFake(),
  ]);
  browser = await launchChromium();
  // axe needs a page of an explicit context.
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  // Nothing leaves this machine: any request to another host fails and is recorded.
  await page.route('**/*', (route) => {
    const { hostname, protocol } = new URL(route.request().url());
    // The gateway takes its callback URL's scheme from x-forwarded-proto (https without it,
    // as behind API Gateway); this plain-http gateway is told so, as a local proxy would.
    if (protocol === 'data:' || hostname === '127.0.0.1' || hostname === 'localhost') {
      return route.continue({ headers: { ...route.request().headers(), 'x-forwarded-proto': 'http' } });
    }
    outsideRequests.push(route.request().url());
    return route.abort();
  });
});

afterAll(async () => {
  await browser?.close();
  await Promise.all([gw?.stop(), fake?.close(), issuer?.stop()]);
});

const open = async (id: string) => {
  await page.goto(`${gw.url}/console/#/${id}`);
  await page.getByRole('heading', { level: 1 }).first().waitFor(BOUND);
};

/** Signs in afresh: the previous session's cookie is dropped first. */
async function signIn(key: string) {
  await page.goto(`${gw.url}/console/`);
  await page.context().clearCookies();
  await page.reload();
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Pages' }).waitFor(BOUND);
}

/** Serious and critical accessibility violations of what the page shows now. */
async function seriousViolations(): Promise<string[]> {
  const result = await new AxeBuilder({ page }).analyze();
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

/** Clicks `refresh` until `text` appears in the page (records and counters are written after the answer). */
async function until(refresh: () => Promise<void>, check: () => Promise<boolean>, what: string, timeoutMs = 20_000, explain?: () => Promise<string>) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not seen within ${timeoutMs} ms${explain ? ` (${await explain()})` : ''}`);
    await new Promise((r) => setTimeout(r, 300));
    await refresh();
  }
}

const totalRequests = async () => Number((await page.getByTestId('total-requests').textContent()) ?? 'NaN');

describe('the console in a browser', () => {
  it('signs in with a key, manages keys and providers, runs the playground, logs and charts the request, and revokes the key', async () => {
    await page.goto(`${gw.url}/console/`);
    await page.getByRole('heading', { name: 'Sign in with an API key' }).waitFor(BOUND);
    expect(await seriousViolations()).toEqual([]);
    await page.screenshot({ path: `${ARTIFACTS}/sign-in.png` });

    await signIn(gw.adminKey);
    // The key became a console session: an HttpOnly cookie, and the page keeps no key.
    const cookie = (await page.context().cookies()).find((c) => c.name === 'gw_console');
    expect(cookie).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Strict' });
    expect(await page.evaluate('JSON.stringify(sessionStorage) + JSON.stringify(localStorage) + document.cookie')).not.toContain(gw.adminKey);
    await open('overview');
    await page.getByTestId('total-requests').filter({ hasText: /\d/ }).waitFor(BOUND);
    const requestsBefore = await totalRequests();

    // A key: created with a role, its secret shown once.
    await open('keys');
    await page.getByLabel('Name').fill('browser-key');
    await page.getByLabel('Role').selectOption('member');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.getByTestId('new-secret').textContent({ timeout: BOUND.timeout }))!;
    expect(secret.length).toBeGreaterThan(20);
    expect((await call(gw, 'GET', '/v1/logs?limit=1', { key: secret })).status).toBe(200);
    await page.getByRole('button', { name: 'I have copied it' }).click();
    await page.reload();
    await page.getByRole('cell', { name: 'browser-key', exact: true }).waitFor(BOUND);
    expect(await page.content()).not.toContain(secret);

    // A managed provider pointing at the fake: its credential is never shown back.
    await open('providers');
    await page.getByLabel('Slug').fill('fake-openai');
    await page.getByLabel('Provider', { exact: true }).selectOption('openai');
    await page.getByLabel('Custom host (optional)').fill(`${fake.url}/v1`);
    await page.getByLabel('API key').fill('sk-fake-credential');
    await page.getByRole('button', { name: 'Store provider' }).click();
    await page.getByRole('cell', { name: 'fake-openai', exact: true }).waitFor(BOUND);
    await page.reload();
    await page.getByRole('cell', { name: 'fake-openai', exact: true }).waitFor(BOUND);
    expect(await page.content()).not.toContain('sk-fake-credential');

    // A prompt whose text is hostile HTML: shown as text, and nothing in it runs.
    await open('prompts');
    await page.getByLabel('Name').fill('greeting');
    await page
      .getByLabel('Template (Mustache; a JSON array of messages or plain text)')
      .fill(JSON.stringify([{ role: 'user', content: `Hello {{name}} ${HOSTILE}` }]));
    await page.getByRole('button', { name: 'Create prompt' }).click();
    await page.getByRole('button', { name: 'Open greeting' }).click();
    await page.getByText('<script>window.__xss', { exact: false }).first().waitFor(BOUND);
    // Shown as text, not parsed: no element came of it (the CSP, which allows no inline script, is a second line).
    expect(await page.locator('main img, main script').count()).toBe(0);

    // The playground: a version rendered, then a completion streamed through the chosen provider.
    await page.getByLabel('Provider', { exact: true }).selectOption('fake-openai');
    await page.getByLabel('Variables (JSON)').fill('{"name":"Ada"}');
    await page.getByRole('button', { name: 'Run (streamed)' }).click();
    await page.getByTestId('playground-output').filter({ hasText: 'echo: Hello Ada' }).waitFor(BOUND);
    expect(await page.getByTestId('playground-output').textContent()).toContain('<img src=x onerror=');
    expect(await page.locator('main img, main script').count()).toBe(0);
    expect(fake.count('/chat/completions')).toBe(1);
    expect((fake.last()!.body as { stream?: boolean }).stream).toBe(true);
    await page.screenshot({ path: `${ARTIFACTS}/prompts.png`, fullPage: true });

    // The request in the log table, and its record's detail.
    await open('logs');
    const row = page.getByRole('row').filter({ hasText: 'gpt-4o-mini' }).first();
    await until(
      () => page.getByRole('button', { name: 'Filter' }).click(),
      () => row.isVisible(),
      'the request in the log table',
      // Once in a full CI run (four files at once on two cores) the row took longer than 20 s,
      // though the next test's screenshot of the page shows it.
      45_000,
      async () =>
        `the logs API lists: ${JSON.stringify((await call(gw, 'GET', '/v1/logs?limit=5')).body?.data?.map((r: { route?: string; model?: string }) => `${r.route} ${r.model}`))}`,
    );
    await row.getByRole('button', { name: /Open request/ }).click();
    await page.getByRole('heading', { name: 'Routing attempts' }).waitFor(BOUND);
    await page.screenshot({ path: `${ARTIFACTS}/log-detail.png`, fullPage: true });

    // The spend report moves.
    await open('overview');
    await until(
      () => open('overview'),
      async () => (await totalRequests()) > requestsBefore,
      'the request in the spend totals',
    );

    // Revoke the key: two steps, then the key no longer works.
    await open('keys');
    await page.getByRole('button', { name: 'Revoke browser-key' }).click();
    await page.getByRole('button', { name: 'Confirm revoking browser-key' }).click();
    await page.getByRole('row').filter({ hasText: 'browser-key' }).filter({ hasText: 'revoked' }).waitFor(BOUND);
    expect((await call(gw, 'GET', '/v1/logs?limit=1', { key: secret })).status).toBe(401);

    expect(await page.evaluate('window.__xss')).toBeUndefined();
    expect(dialogs).toEqual([]);
    expect(outsideRequests).toEqual([]);
  }, 300_000);

  it('has no serious or critical accessibility violation on any page, and saves a screenshot of each', async () => {
    await signIn(gw.adminKey);
    for (const id of PAGES) {
      await open(id);
      await page.waitForLoadState('networkidle');
      expect({ page: id, violations: await seriousViolations() }).toEqual({ page: id, violations: [] });
      await page.screenshot({ path: `${ARTIFACTS}/${id}.png`, fullPage: true });
    }
    expect(await page.evaluate('window.__xss')).toBeUndefined();
    expect(dialogs).toEqual([]);
  }, 300_000);

  it('shows the role a forbidden action needs, and returns to sign-in when the sign-in ends', async () => {
    // A viewer key that expires soon: the console's sign-in with it ends when it does.
    const expiresAt = Math.floor(Date.now() / 1000) + 20;
    const viewer = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'browser-viewer', role: 'viewer', expires_at: expiresAt } });
    expect(viewer.status, viewer.text).toBe(200);
    await signIn(gw.adminKey);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in with an API key' }).waitFor(BOUND);
    await signIn(viewer.body.secret);

    await open('keys');
    await page.getByLabel('Name').fill('not-allowed');
    await page.getByRole('button', { name: 'Create key' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'Not allowed for your role' });
    await alert.waitFor(BOUND);
    expect(await alert.textContent()).toMatch(/workspace-admin/);

    // Once the key has expired, the console's next call returns to sign-in.
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt * 1000 - Date.now() + 500)));
    await open('logs');
    await page.getByRole('heading', { name: 'Sign in with an API key' }).waitFor(BOUND);
  }, 120_000);

  it("signs in by single sign-on: the button leads through the issuer back to the console, with the role of the user's groups", async () => {
    await page.context().clearCookies();
    await page.goto(`${gw.url}/console/`);
    await page.getByRole('link', { name: 'Sign in with Test issuer' }).click();
    await page.getByRole('navigation', { name: 'Pages' }).waitFor(BOUND);
    expect(await page.locator('header').textContent()).toContain('viewer');
    await page.screenshot({ path: `${ARTIFACTS}/signed-in-by-sso.png` });

    await open('keys');
    await page.getByLabel('Name').fill('not-allowed');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('alert').filter({ hasText: 'Not allowed for your role' }).waitFor(BOUND);
  }, 120_000);
});
