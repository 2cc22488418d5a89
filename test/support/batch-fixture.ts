import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startAnthropicFake, startOpenAIFake, type FakeServer } from '../fakes';
import { call, startTestGateway } from './gateway';

/** What the batch API tests share: a gateway, an OpenAI and an Anthropic fake, and a key of another workspace. */
export interface BatchFixture {
  gw: LocalGateway;
  openaiFake: FakeServer;
  claudeFake: FakeServer;
  /** A gateway key of another workspace (isolation). */
  otherKey: string;
}

/**
 * Registers the hooks that start it (managed providers `<prefix>-openai` and `<prefix>-claude`
 * on the fakes), reset the fakes after each test and stop everything; its fields are set once
 * the first `beforeAll` has run.
 */
export function useBatchFixture(prefix: string, otherTeam: string): BatchFixture {
  const f = {} as BatchFixture;
  beforeAll(async () => {
    [f.openaiFake, f.claudeFake] = await Promise.all([startOpenAIFake(), startAnthropicFake()]);
    f.gw = await startTestGateway();
    for (const [slug, provider, fake] of [
      [`${prefix}-openai`, 'openai', f.openaiFake],
      [`${prefix}-claude`, 'anthropic', f.claudeFake],
    ] as const) {
      const created = await call(f.gw, 'POST', '/v1/providers', { body: { slug, provider, api_key: 'sk-managed', custom_host: `${fake.url}/v1` } });
      expect(created.status, created.text).toBe(200);
    }
    const ws = await call(f.gw, 'POST', '/v1/workspaces', { body: { name: otherTeam } });
    const key = await call(f.gw, 'POST', '/v1/api-keys', { body: { name: 'other', workspace_id: ws.body.id, scopes: ['gateway'] } });
    expect(key.status, key.text).toBe(200);
    f.otherKey = key.body.secret;
  });
  afterAll(async () => {
    await f.gw?.stop();
    await Promise.all([f.openaiFake?.close(), f.claudeFake?.close()]);
  });
  afterEach(() => {
    f.openaiFake.reset();
    f.claudeFake.reset();
  });
  return f;
}
