import { createHash } from 'node:crypto';
import { config } from '../shared/config';
import { queryAll } from '../shared/db/ops';
import { TtlCache } from '../shared/stores/ttl-cache';
import { PRICE_FIELDS, type PriceField, type PriceOverride, type Prices } from './price-fields';

/**
 * The read side of a workspace's price overrides (see ./price-overrides.ts): what the
 * gateway's pricing needs, cached per container like the rate-limit policies, and nothing
 * that writes (the gateway is granted read access to the policies table only).
 */

export type OverrideItem = PriceOverride & { pk: string; sk: string };

const SK_PREFIX = 'PRICE#';
const workspacePk = (workspaceId: string) => `WS#${workspaceId}`;
export const overrideKey = (workspaceId: string, id: string) => ({ pk: workspacePk(workspaceId), sk: SK_PREFIX + id });

/** Model names compare case-insensitively, as the catalogue matches them. */
export const overrideId = (provider: string, model: string) =>
  `price_${createHash('sha256').update(`${provider.toLowerCase()}\n${model.toLowerCase()}`).digest('base64url').slice(0, 24)}`;

const ID_PATTERN = /^price_[A-Za-z0-9_-]{24}$/;
export const isOverrideId = (id: string) => ID_PATTERN.test(id);

export const pricesOf = (o: Prices): Prices => {
  const out: Prices = {};
  for (const field of Object.keys(PRICE_FIELDS) as PriceField[]) if (typeof o[field] === 'number') out[field] = o[field];
  return out;
};

export const fromItem = ({ pk: _pk, sk: _sk, ...rest }: OverrideItem): PriceOverride => ({
  object: 'price_override',
  id: rest.id,
  provider: rest.provider,
  model: rest.model,
  ...pricesOf(rest),
  workspace_id: rest.workspace_id,
  created_at: rest.created_at,
  last_updated_at: rest.last_updated_at,
});

export async function listOverrides(workspaceId: string): Promise<PriceOverride[]> {
  return (await queryAll<OverrideItem>('policies', workspacePk(workspaceId), SK_PREFIX)).map(fromItem);
}

/** provider + '\n' + lower-cased model -> prices. */
type OverrideIndex = Map<string, Prices>;

const overrideCache = /* @__PURE__ */ new TtlCache<OverrideIndex>(() => config().policyCacheTtlMs);

const indexKey = (provider: string, model: string) => `${provider}\n${model.toLowerCase()}`;

async function loadIndex(workspaceId: string): Promise<OverrideIndex> {
  const index: OverrideIndex = new Map();
  for (const o of await listOverrides(workspaceId)) index.set(indexKey(o.provider, o.model), pricesOf(o));
  return index;
}

/** Start reading the workspace's overrides so pricing finds them loaded. */
export function warmOverrides(workspaceId: string): void {
  overrideCache.get(workspaceId, () => loadIndex(workspaceId)).catch(() => undefined);
}

/** The workspace's override for a provider and model, if any. */
export async function findOverride(workspaceId: string, provider: string, model: string): Promise<Prices | undefined> {
  const index = await overrideCache.get(workspaceId, () => loadIndex(workspaceId));
  return index?.get(indexKey(provider, model));
}

/** Drop cached overrides: of one workspace (after a write in this container) or all (tests). */
export function clearOverrideCache(workspaceId?: string): void {
  if (workspaceId === undefined) overrideCache.clear();
  else overrideCache.delete(workspaceId);
}
