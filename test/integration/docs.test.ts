import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, errorOf, startTestGateway } from '../support/gateway';

/**
 * The README's "First success without a provider account" section, run as written: its
 * shell blocks (but the commands that start servers, which the test starts itself) and its
 * JavaScript block, against a local gateway and the demo model (the keyless OpenAI fake of
 * `npm run demo-model`). Its data folder is not the default `.gateway`: the README reads the
 * admin key from wherever GATEWAY_DATA_DIR puts it.
 */
const REPO = resolve(import.meta.dirname, '../..');
const README = readFileSync(join(REPO, 'README.md'), 'utf8');
const SECTION = '## First success without a provider account';

function sectionBlocks(): Array<{ lang: string; code: string }> {
  const start = README.indexOf(SECTION);
  if (start < 0) throw new Error(`README.md has no "${SECTION}" section`);
  const end = README.indexOf('\n## ', start + SECTION.length);
  const text = README.slice(start, end < 0 ? undefined : end);
  return [...text.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, code: m[2]! }));
}

let gw: LocalGateway;
let model: FakeServer;
let home: string;

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'readme-'));
  model = await startOpenAIFake({ keyless: true });
  gw = await startTestGateway({ dataDir: join(home, 'gateway-data') });
});
afterAll(async () => {
  await gw?.stop();
  await model?.close();
  if (home) rmSync(home, { recursive: true, force: true });
});

describe('README: first success without a provider account', () => {
  it('gets from a fresh gateway to a streamed answer, with curl and with the OpenAI SDK', async () => {
    const blocks = sectionBlocks();
    const here = (code: string) => code.replaceAll('http://127.0.0.1:8787', gw.url).replaceAll('http://127.0.0.1:11434', model.url);
    const shell = blocks
      .filter((b) => b.lang === 'sh')
      .map((b) => b.code)
      .filter((code) => !/^(GATEWAY_\w+=\S+ )*npm (start|run demo-model)\s*$/.test(code.trim()))
      .map(here);
    const js = blocks.filter((b) => b.lang === 'js').map((b) => here(b.code));
    expect(shell).toHaveLength(1);
    expect(js).toHaveLength(1);

    const script = `set -e\ncd "$HOME_DIR"\n${shell[0]}\necho '--- sdk'\ncd "$REPO"\nnode --input-type=module -e "$FIRST_JS"\n`;
    const { stdout } = await promisify(execFile)('bash', ['-c', script], {
      env: { PATH: process.env.PATH!, HOME_DIR: home, REPO, FIRST_JS: js[0]!, GATEWAY_DATA_DIR: join(home, 'gateway-data') },
      timeout: 60_000,
    });
    const [curlOutput, sdkOutput] = stdout.split('--- sdk\n');
    expect(curlOutput).toContain('"slug":"local"');
    const deltas = [...curlOutput!.matchAll(/^data: (\{.*\})$/gm)].map((m) => JSON.parse(m[1]!).choices[0]?.delta?.content ?? '');
    expect(deltas.join('')).toBe('echo: Hello!');
    expect(curlOutput).toContain('data: [DONE]');
    expect(sdkOutput).toBe('echo: Hello!\n');
    // Both went through the gateway to the model, streamed.
    expect(model.requests.filter((r) => r.path === '/v1/chat/completions' && (r.body as { stream?: boolean }).stream === true)).toHaveLength(2);
  });
});

describe('docs/usage.md: saving a config', () => {
  it('saves the example config over the first-success provider and routes by its slug', async () => {
    const usage = readFileSync(join(REPO, 'docs/usage.md'), 'utf8');
    const block = [...usage.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).find((code) => code.includes('/v1/configs'));
    expect(block).toBeDefined();
    const script = `set -e\nexport ADMIN_KEY="$ADMIN"\n${block!.replaceAll('http://127.0.0.1:8787', gw.url)}`;
    const { stdout } = await promisify(execFile)('bash', ['-c', script], { env: { PATH: process.env.PATH!, ADMIN: gw.adminKey }, timeout: 30_000 });
    expect(JSON.parse(stdout)).toMatchObject({ slug: 'local-retries' });

    const chat = await call(gw, 'POST', '/v1/chat/completions', {
      headers: { 'x-gateway-config': 'local-retries' },
      body: { model: 'llama3.2', messages: [{ role: 'user', content: 'Hi' }] },
    });
    expect(chat.status).toBe(200);
    expect(chat.body.choices[0].message.content).toBe('echo: Hi');
  });
});

describe('GET /v1/openapi.json', () => {
  it('serves the committed OpenAPI document to any valid key, and to no one else', async () => {
    const committed = JSON.parse(readFileSync(join(REPO, 'docs/openapi.json'), 'utf8'));
    const keyed = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'reader', scopes: ['gateway'] } });
    const served = await call(gw, 'GET', '/v1/openapi.json', { key: keyed.body.secret });
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toContain('application/json');
    expect(served.body).toEqual(committed);

    const anonymous = await call(gw, 'GET', '/v1/openapi.json', { key: null });
    expect(anonymous.status).toBe(401);
    expect(errorOf(anonymous).code).toBe('missing_api_key');
  });
});
