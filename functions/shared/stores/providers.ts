import { config } from '../config';
import { openJson, sealJson, type EncryptionContext, type Envelope } from '../crypto/envelope';
import { deleteItem, getItem, putNew, updateItem } from '../db/ops';
import { listPage, type Page, type PageRequest } from '../db/list';
import { alreadyExists, conflict } from '../errors';
import { uuid } from '../ids';
import { PLAIN_SETTING_FIELDS, SECRET_SETTING_FIELDS, type PlainSettingField, type ProviderSlug, type SecretSettingField } from '../provider-table';
import { WorkspaceCache } from './ttl-cache';

/**
 * Managed providers (Portkey "virtual keys"): a provider slug plus stored settings and
 * credentials, used with `x-gateway-provider: @slug`. Credentials are envelope-encrypted
 * (crypto/envelope.ts) with the context {workspace_id, slug}; only `has_*` flags leave
 * this module through the API. The data plane reads them with resolveManagedProvider.
 */

/** A managed provider's own slug (what `@slug` names): URL-friendly, unique per workspace. */
export const MANAGED_PROVIDER_SLUG = /^[a-z0-9][a-z0-9-]{0,63}$/;

/** Settings a managed provider stores in the clear, and its credentials (encrypted at rest, never returned). */
export type ProviderSettingField = PlainSettingField;
export type ProviderSecretField = SecretSettingField;
export type ProviderSettings = Record<ProviderSettingField, string | null>;
export type ProviderSecrets = Partial<Record<ProviderSecretField, string>>;

/** A managed provider as stored, without its credentials. */
export interface ManagedProvider extends ProviderSettings {
  id: string;
  slug: string;
  name: string;
  provider: ProviderSlug;
  workspace_id: string;
  /** Which credentials are stored (names only). */
  secret_fields: ProviderSecretField[];
  version: number;
  created_at: number;
  updated_at: number;
}

export interface ManagedProviderWithSecrets extends ManagedProvider {
  secrets: ProviderSecrets;
}

/** What the API returns: settings and `has_*` flags, never a credential. */
export interface PublicProvider extends ProviderSettings {
  object: 'provider';
  id: string;
  slug: string;
  name: string;
  provider: ProviderSlug;
  workspace_id: string;
  has_api_key: boolean;
  has_aws_credentials: boolean;
  has_aws_session_token: boolean;
  created_at: number;
  updated_at: number;
}

type ProviderItem = ManagedProvider & { pk: string; sk: string; gsi1pk: string; gsi1sk: string; secrets?: Envelope };

const now = () => Math.floor(Date.now() / 1000);
const providerKey = (workspaceId: string, slug: string) => ({ pk: `WS#${workspaceId}`, sk: `PROVIDER#${slug}` });
const workspaceProvidersPartition = (workspaceId: string) => `WS#${workspaceId}#PROVIDERS`;
const encryptionContext = (workspaceId: string, slug: string): EncryptionContext => ({ workspace_id: workspaceId, slug });

function fromItem(item: ProviderItem): ManagedProvider {
  const { pk: _pk, sk: _sk, gsi1pk: _g1, gsi1sk: _g2, secrets: _s, ...rest } = item;
  const settings = Object.fromEntries(PLAIN_SETTING_FIELDS.map((f) => [f, rest[f] ?? null])) as ProviderSettings;
  return { ...rest, ...settings, secret_fields: rest.secret_fields ?? [] };
}

export function toPublicProvider(p: ManagedProvider): PublicProvider {
  const has = (f: ProviderSecretField) => p.secret_fields.includes(f);
  return {
    object: 'provider',
    id: p.id,
    slug: p.slug,
    name: p.name,
    provider: p.provider,
    workspace_id: p.workspace_id,
    ...Object.fromEntries(PLAIN_SETTING_FIELDS.map((f) => [f, p[f] ?? null])),
    has_api_key: has('api_key'),
    has_aws_credentials: has('aws_access_key_id') && has('aws_secret_access_key'),
    has_aws_session_token: has('aws_session_token'),
    created_at: p.created_at,
    updated_at: p.updated_at,
  } as PublicProvider;
}

function presentSecrets(secrets: ProviderSecrets): ProviderSecretField[] {
  return SECRET_SETTING_FIELDS.filter((f) => typeof secrets[f] === 'string' && secrets[f] !== '');
}

async function seal(workspaceId: string, slug: string, secrets: ProviderSecrets): Promise<Envelope | undefined> {
  const fields = presentSecrets(secrets);
  if (!fields.length) return undefined;
  const bundle = Object.fromEntries(fields.map((f) => [f, secrets[f]]));
  return sealJson(bundle, encryptionContext(workspaceId, slug));
}

async function unseal(item: ProviderItem): Promise<ProviderSecrets> {
  return item.secrets ? openJson<ProviderSecrets>(item.secrets, encryptionContext(item.workspace_id, item.slug)) : {};
}

// ---- data-plane read path -------------------------------------------------------------

const cache = new WorkspaceCache<ManagedProviderWithSecrets>(() => config().controlCacheTtlMs);

/**
 * A managed provider with its decrypted credentials, for the data plane. Cached per
 * container for CONTROL_CACHE_TTL_MS, so the warm path makes no DynamoDB or KMS call;
 * updates and deletes in this container take effect at once, elsewhere within the TTL.
 */
export function resolveManagedProvider(workspaceId: string, slug: string): Promise<ManagedProviderWithSecrets | undefined> {
  if (!MANAGED_PROVIDER_SLUG.test(slug)) return Promise.resolve(undefined);
  return cache.get(workspaceId, slug, async () => {
    const item = await getItem<ProviderItem>('control', providerKey(workspaceId, slug));
    if (!item) return undefined;
    return { ...fromItem(item), secrets: await unseal(item) };
  });
}

export function clearProviderCache(): void {
  cache.clear();
}

// ---- control-plane CRUD ---------------------------------------------------------------

export interface ProviderInput {
  slug: string;
  provider: ProviderSlug;
  name?: string;
  settings: Partial<ProviderSettings>;
  secrets: ProviderSecrets;
}

export async function createProvider(workspaceId: string, input: ProviderInput): Promise<ManagedProvider> {
  const ts = now();
  const id = uuid();
  const settings = Object.fromEntries(PLAIN_SETTING_FIELDS.map((f) => [f, input.settings[f] ?? null])) as ProviderSettings;
  const record: ManagedProvider = {
    id,
    slug: input.slug,
    name: input.name ?? input.slug,
    provider: input.provider,
    workspace_id: workspaceId,
    ...settings,
    secret_fields: presentSecrets(input.secrets),
    version: 1,
    created_at: ts,
    updated_at: ts,
  };
  const envelope = await seal(workspaceId, input.slug, input.secrets);
  const item: ProviderItem = {
    ...providerKey(workspaceId, input.slug),
    gsi1pk: workspaceProvidersPartition(workspaceId),
    gsi1sk: id,
    ...record,
    ...(envelope ? { secrets: envelope } : {}),
  };
  if (!(await putNew('control', item as unknown as ProviderItem & Record<string, unknown>))) {
    throw alreadyExists(`A provider with slug '${input.slug}' already exists in this workspace.`, 'slug_taken');
  }
  cache.forget(workspaceId, input.slug);
  return record;
}

export async function getProvider(workspaceId: string, slug: string): Promise<ManagedProvider | undefined> {
  const item = await getItem<ProviderItem>('control', providerKey(workspaceId, slug), true);
  return item ? fromItem(item) : undefined;
}

export async function listProviders(workspaceId: string, page: PageRequest): Promise<Page<ManagedProvider>> {
  const result = await listPage<ProviderItem>({ table: 'control', index: 'gsi1', partition: workspaceProvidersPartition(workspaceId), prefix: '' }, page);
  return { items: result.items.map(fromItem), hasMore: result.hasMore };
}

export interface ProviderPatch {
  name?: string;
  provider?: ProviderSlug;
  /** A value replaces the setting, null clears it, absent keeps it. */
  settings: Partial<ProviderSettings>;
  /** A string replaces the credential, null removes it, absent keeps it. */
  secrets: Partial<Record<ProviderSecretField, string | null>>;
}

/**
 * Apply a patch; undefined when the provider does not exist. `check` sees the merged
 * record (with the names of the credentials it will hold) before anything is sealed or
 * written. Credentials are re-sealed only when they change, and the write is conditional
 * on the version read, so a concurrent update cannot be lost silently (409 instead).
 */
export async function updateProvider(
  workspaceId: string,
  slug: string,
  patch: ProviderPatch,
  check: (merged: ManagedProvider) => void = () => undefined,
): Promise<ManagedProvider | undefined> {
  const key = providerKey(workspaceId, slug);
  const item = await getItem<ProviderItem>('control', key, true);
  if (!item) return undefined;
  const current = fromItem(item);
  const next = mergeRecord(current, patch);
  check(next);

  const set: Record<string, unknown> = {
    name: next.name,
    provider: next.provider,
    secret_fields: next.secret_fields,
    version: current.version + 1,
    updated_at: now(),
  };
  const remove: string[] = [];
  for (const f of PLAIN_SETTING_FIELDS) {
    if (next[f] === null) remove.push(f);
    else set[f] = next[f];
  }
  if (SECRET_SETTING_FIELDS.some((f) => patch.secrets[f] !== undefined)) {
    const merged: ProviderSecrets = { ...(await unseal(item)) };
    for (const f of SECRET_SETTING_FIELDS) {
      const value = patch.secrets[f];
      if (value === null) delete merged[f];
      else if (value !== undefined) merged[f] = value;
    }
    const envelope = await seal(workspaceId, slug, merged);
    if (envelope) set.secrets = envelope;
    else remove.push('secrets');
  }
  const updated = await updateItem<ProviderItem>('control', key, {
    set,
    remove,
    condition: 'attribute_exists(pk) AND #version = :expected',
    conditionValues: { ':expected': current.version },
  });
  cache.forget(workspaceId, slug);
  if (updated) return fromItem(updated);
  if (!(await getItem('control', key, true))) return undefined;
  throw conflict(`Provider '${slug}' was changed by another request; read it again and retry.`, 'concurrent_update');
}

function mergeRecord(current: ManagedProvider, patch: ProviderPatch): ManagedProvider {
  const next: ManagedProvider = { ...current };
  if (patch.name !== undefined) next.name = patch.name;
  if (patch.provider !== undefined) next.provider = patch.provider;
  for (const f of PLAIN_SETTING_FIELDS) {
    const value = patch.settings[f];
    if (value !== undefined) next[f] = value;
  }
  next.secret_fields = SECRET_SETTING_FIELDS.filter((f) => {
    const value = patch.secrets[f];
    return value === undefined ? current.secret_fields.includes(f) : value !== null && value !== '';
  });
  return next;
}

/** Delete; returns the deleted record, or undefined when there was none. */
export async function deleteProvider(workspaceId: string, slug: string): Promise<ManagedProvider | undefined> {
  const key = providerKey(workspaceId, slug);
  const item = await getItem<ProviderItem>('control', key, true);
  const deleted = item ? await deleteItem('control', key, 'attribute_exists(pk)') : false;
  cache.forget(workspaceId, slug);
  return item && deleted ? fromItem(item) : undefined;
}
