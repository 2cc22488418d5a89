import { setTimeout as sleep } from 'node:timers/promises';
import type { LocalGateway } from '../../infra/local/server';
import { api, setUpFullChat, setUpLimitedChat } from './admin';
import { PROVIDER_KEY, type Upstreams } from './scenarios';

/** DynamoDB commands that read, and those that write (everything the code base sends). */
const READS = new Set(['GetCommand', 'GetItemCommand', 'QueryCommand', 'ScanCommand', 'BatchGetCommand', 'BatchGetItemCommand', 'TransactGetItemsCommand']);
const WRITES = new Set([
  'PutCommand',
  'PutItemCommand',
  'UpdateCommand',
  'UpdateItemCommand',
  'DeleteCommand',
  'DeleteItemCommand',
  'BatchWriteCommand',
  'BatchWriteItemCommand',
  'TransactWriteCommand',
  'TransactWriteItemsCommand',
]);

export interface StorageRow {
  scenario: string;
  description: string;
  requests: number;
  /** Per request on the warm path. */
  readsPerRequest: number;
  writesPerRequest: number;
  /** Command counts over the warm window (DynamoDB command names as the SDK named them, e.g. `GetItemCommand`). */
  commands: Record<string, number>;
  /** The first request of the scenario (caches cold for this key/config/provider). */
  firstRequest: Record<string, number>;
  statuses: Record<string, number>;
}

type Counter = Record<string, number>;
const snapshot = (c: Counter): Counter => ({ ...c });
const delta = (after: Counter, before: Counter): Counter =>
  Object.fromEntries(
    Object.entries(after)
      .map(([k, v]) => [k, v - (before[k] ?? 0)])
      .filter(([, v]) => (v as number) !== 0),
  );
const sum = (c: Counter, kinds: Set<string>) => Object.entries(c).reduce((n, [k, v]) => n + (kinds.has(k) ? v : 0), 0);

/**
 * Storage round-trips per request on the warm path, counted by the `storageCalls` counter
 * of functions/shared/db/client.ts. The gateway runs IN this process (the
 * counter is a module variable; no debug route exists), on the bench's DynamoDB Local.
 */
export async function measureStorageCalls(gw: LocalGateway, upstreams: Upstreams, requests: number): Promise<StorageRow[]> {
  // Imported only now: the handlers' modules read their settings when first loaded.
  const { storageCalls } = await import('../../functions/shared/db/client');
  const admin = (method: string, path: string, body?: unknown) => api(gw.url, gw.adminKey, method, path, body);
  const key = (await admin('POST', '/v1/api-keys', { name: 'bench-storage', scopes: ['gateway'] })) as { id: string; secret: string };
  const limited = await setUpLimitedChat(admin, 'bench', upstreams.openai0, PROVIDER_KEY);
  const full = await setUpFullChat(gw.url, gw.adminKey, 'bench-storage-full', upstreams.openai0, { tokens: true });

  const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Count my storage calls' }] });
  const scenarios: Array<{ scenario: string; description: string; path: string; headers: Record<string, string> }> = [
    {
      scenario: 'generic proxy',
      description: 'POST /v1/v1/chat/completions, x-gateway-provider: openai + custom host + Authorization',
      path: '/v1/v1/chat/completions',
      headers: {
        'x-gateway-api-key': key.secret,
        'x-gateway-provider': 'openai',
        'x-gateway-custom-host': upstreams.openai0,
        authorization: `Bearer ${PROVIDER_KEY}`,
      },
    },
    {
      scenario: 'unified chat',
      description: 'POST /v1/chat/completions, x-gateway-provider: openai + custom host + Authorization',
      path: '/v1/chat/completions',
      headers: {
        'x-gateway-api-key': key.secret,
        'x-gateway-provider': 'openai',
        'x-gateway-custom-host': `${upstreams.openai0}/v1`,
        authorization: `Bearer ${PROVIDER_KEY}`,
      },
    },
    {
      scenario: 'chat + rate limit + managed provider + saved config',
      description:
        'POST /v1/chat/completions, x-gateway-config: bench-config (saved; target @bench-openai, a managed provider), key under a requests/min policy',
      path: '/v1/chat/completions',
      headers: { 'x-gateway-api-key': limited.secret, 'x-gateway-config': 'bench-config' },
    },
    {
      scenario: 'chat with every feature + tokens policy',
      description:
        'the row above plus a monthly budget and a tokens/min policy on the key (neither refuses): admission reads neither while far from its limit (read-ahead)',
      path: '/v1/chat/completions',
      headers: full.headers,
    },
  ];

  const rows: StorageRow[] = [];
  for (const s of scenarios) {
    const statuses: Record<string, number> = {};
    const send = async () => {
      const res = await fetch(gw.url + s.path, { method: 'POST', headers: { 'content-type': 'application/json', ...s.headers }, body });
      await res.arrayBuffer();
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    };
    // After-response work (the request-log write) finishes shortly after the body: let it land.
    const settle = () => sleep(300);
    let before = snapshot(storageCalls);
    await send();
    await settle();
    const firstRequest = delta(storageCalls, before);
    for (let i = 0; i < 20; i++) await send();
    await settle();
    before = snapshot(storageCalls);
    for (let i = 0; i < requests; i += 10) await Promise.all(Array.from({ length: 10 }, send));
    await settle();
    const commands = delta(storageCalls, before);
    rows.push({
      scenario: s.scenario,
      description: s.description,
      requests,
      readsPerRequest: sum(commands, READS) / requests,
      writesPerRequest: sum(commands, WRITES) / requests,
      commands,
      firstRequest,
      statuses,
    });
  }
  return rows;
}
