import { deleteItem, getItem, putNew, updateItem } from '../shared/db/ops';
import { z } from '../shared/validation';
import { clearOverrideCache, fromItem, isOverrideId, overrideId, overrideKey, pricesOf, type OverrideItem } from './override-lookup';
import { PRICE_FIELDS, type PriceField, type PriceOverride, type Prices } from './price-fields';

export { listOverrides } from './override-lookup';

/**
 * A workspace's own prices (fine-tuned or self-hosted models, negotiated rates): one per
 * provider and model, winning over the catalogue. Stored in the policies table beside the
 * workspace's rate limits and budgets (`pk = WS#<workspace>`, `sk = PRICE#<id>`); the id is
 * derived from provider and model, so a second override for the same pair is a conflict
 * decided by DynamoDB, not by a read before the write.
 */

/** USD per unit; at most one million dollars per million tokens keeps typos visible. */
const usd = z.number().check(z.gte(0), z.lte(1_000_000));

const priceFields = Object.fromEntries(Object.keys(PRICE_FIELDS).map((f) => [f, z.optional(usd)])) as Record<PriceField, z.ZodMiniOptional<typeof usd>>;

const name = z.string().check(z.minLength(1), z.maxLength(256));

export const createOverrideSchema = z.strictObject({
  provider: name,
  model: name,
  ...priceFields,
  workspace_id: z.optional(z.string().check(z.minLength(1), z.maxLength(128))),
});

export const updateOverrideSchema = z.strictObject(priceFields);

/** The new override, or undefined when the workspace already has one for this provider and model. */
export async function createOverride(workspaceId: string, provider: string, model: string, prices: Prices): Promise<PriceOverride | undefined> {
  const at = new Date().toISOString();
  const override: PriceOverride = {
    object: 'price_override',
    id: overrideId(provider, model),
    provider,
    model,
    ...pricesOf(prices),
    workspace_id: workspaceId,
    created_at: at,
    last_updated_at: at,
  };
  const created = await putNew('policies', { ...overrideKey(workspaceId, override.id), ...override });
  if (created) clearOverrideCache(workspaceId);
  return created ? override : undefined;
}

export async function getOverride(workspaceId: string, id: string): Promise<PriceOverride | undefined> {
  if (!isOverrideId(id)) return undefined;
  const item = await getItem<OverrideItem>('policies', overrideKey(workspaceId, id), true);
  return item ? fromItem(item) : undefined;
}

/** Replace an override's prices (fields left out are removed); undefined when it does not exist. */
export async function replaceOverridePrices(workspaceId: string, id: string, prices: Prices): Promise<PriceOverride | undefined> {
  if (!isOverrideId(id)) return undefined;
  const set = pricesOf(prices);
  const updated = await updateItem<OverrideItem>('policies', overrideKey(workspaceId, id), {
    set: { ...set, last_updated_at: new Date().toISOString() },
    remove: (Object.keys(PRICE_FIELDS) as PriceField[]).filter((f) => set[f] === undefined),
    condition: 'attribute_exists(#pk)',
  });
  if (updated) clearOverrideCache(workspaceId);
  return updated ? fromItem(updated) : undefined;
}

export async function deleteOverride(workspaceId: string, id: string): Promise<boolean> {
  if (!isOverrideId(id)) return false;
  const deleted = await deleteItem('policies', overrideKey(workspaceId, id), 'attribute_exists(pk)');
  if (deleted) clearOverrideCache(workspaceId);
  return deleted;
}
