import { badRequest, notFound } from '../shared/errors';
import { listObject, pageFromQuery } from '../shared/http/list';
import { ok } from '../shared/http/response';
import type { GatewayRequest, Route } from '../shared/http/types';
import {
  createProvider,
  deleteProvider,
  getProvider,
  listProviders,
  MANAGED_PROVIDER_SLUG,
  toPublicProvider,
  updateProvider,
  type ManagedProvider,
  type ProviderSecretField,
  type ProviderSettingField,
} from '../shared/stores/providers';
import { PLAIN_SETTING_FIELDS, PROVIDER_SETTINGS, PROVIDER_SLUGS, SECRET_SETTING_FIELDS } from '../shared/provider-table';
import { log } from '../shared/telemetry/logger';
import { parseInput, z } from '../shared/validation';
import { idempotency } from '../shared/http/idempotency';

/** Managed providers: `/v1/providers`. Credentials go in, only `has_*` flags come out. */

/** `catalog` names the provider catalog route under `/v1/providers/`, so no managed provider may take it. */
const RESERVED_SLUGS = new Set(['catalog']);
const slug = z.string().check(
  z.regex(MANAGED_PROVIDER_SLUG, 'expected 1-64 lower-case letters, digits and dashes, starting with a letter or digit'),
  z.refine((s) => !RESERVED_SLUGS.has(s), 'reserved: `/v1/providers/catalog` is the provider catalog'),
);
const text = (max: number) => z.string().check(z.minLength(1), z.maxLength(max));

/** Custom hosts: http(s) only, no userinfo. Private addresses are refused where the host is called. */
function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && !url.username && !url.password && url.hostname !== '';
  } catch {
    return false;
  }
}
const customHost = z.string().check(z.maxLength(2048), z.refine(isHttpUrl, 'expected an http(s) URL without credentials'));

/** Each setting as the table bounds it; a custom host must also be a URL. */
const shapeOf = (field: string, maxLength: number) => (field === 'custom_host' ? customHost : text(maxLength));
const shapes = <F extends string>(secret: boolean) =>
  Object.fromEntries(PROVIDER_SETTINGS.filter((r) => r.secret === secret).map((r) => [r.field, shapeOf(r.field, r.maxLength)])) as Record<
    F,
    ReturnType<typeof text>
  >;

const settingShapes = shapes<ProviderSettingField>(false);
const secretShapes = shapes<ProviderSecretField>(true);

/** Optional and nullable: on create null means absent; on update null clears the field. */
const clearable = <T extends Record<string, z.ZodMiniType>>(shapes: T) =>
  Object.fromEntries(Object.entries(shapes).map(([k, s]) => [k, z.optional(z.nullable(s))])) as {
    [K in keyof T]: z.ZodMiniOptional<z.ZodMiniNullable<T[K]>>;
  };

const createSchema = z.strictObject({
  slug,
  provider: z.enum(PROVIDER_SLUGS),
  name: z.optional(text(128)),
  ...clearable(settingShapes),
  ...clearable(secretShapes),
});

const updateSchema = z.strictObject({
  provider: z.optional(z.enum(PROVIDER_SLUGS)),
  name: z.optional(text(128)),
  ...clearable(settingShapes),
  ...clearable(secretShapes),
});

type Body = Partial<Record<ProviderSettingField | ProviderSecretField, string | null>>;

const pick = <F extends string>(body: Body, fields: readonly F[]) =>
  Object.fromEntries(fields.filter((f) => body[f as keyof Body] !== undefined).map((f) => [f, body[f as keyof Body]])) as Partial<Record<F, string | null>>;

/** AWS credentials come as a pair; a session token needs the pair. */
function checkCredentials(p: Pick<ManagedProvider, 'secret_fields'>): void {
  const has = (f: ProviderSecretField) => p.secret_fields.includes(f);
  if (has('aws_access_key_id') !== has('aws_secret_access_key')) {
    const missing = has('aws_access_key_id') ? 'aws_secret_access_key' : 'aws_access_key_id';
    throw badRequest(`Invalid \`${missing}\`: required together with the other AWS credential.`, missing, 'invalid_value');
  }
  if (has('aws_session_token') && !has('aws_access_key_id')) {
    throw badRequest('Invalid `aws_session_token`: requires `aws_access_key_id` and `aws_secret_access_key`.', 'aws_session_token', 'invalid_value');
  }
}

function providerSlug(req: GatewayRequest): string {
  const value = req.params.slug!;
  if (!MANAGED_PROVIDER_SLUG.test(value)) throw notFound(`No provider '${value.slice(0, 64)}' in this workspace.`, 'slug');
  return value;
}

async function create(req: GatewayRequest) {
  const body = parseInput(createSchema, req.json());
  const secrets = Object.fromEntries(Object.entries(pick(body, SECRET_SETTING_FIELDS)).filter(([, v]) => v !== null)) as Record<ProviderSecretField, string>;
  checkCredentials({ secret_fields: SECRET_SETTING_FIELDS.filter((f) => secrets[f] !== undefined) });
  const settings = pick(body, PLAIN_SETTING_FIELDS);
  const created = await createProvider(req.auth.workspaceId, {
    slug: body.slug,
    provider: body.provider,
    name: body.name,
    settings,
    secrets,
  });
  log.info('managed provider created', { slug: created.slug, provider: created.provider, secret_fields: created.secret_fields }, req.context);
  return ok(toPublicProvider(created));
}

async function list(req: GatewayRequest) {
  const page = await listProviders(req.auth.workspaceId, pageFromQuery(req.query, { order: 'asc' }));
  return ok(listObject(page.items.map(toPublicProvider), page.hasMore));
}

async function get(req: GatewayRequest) {
  const slugParam = providerSlug(req);
  const found = await getProvider(req.auth.workspaceId, slugParam);
  if (!found) throw notFound(`No provider '${slugParam}' in this workspace.`, 'slug');
  return ok(toPublicProvider(found));
}

async function update(req: GatewayRequest) {
  const slugParam = providerSlug(req);
  const body = parseInput(updateSchema, req.json());
  if (Object.keys(body).length === 0) throw badRequest('Nothing to update: send at least one field.', null, 'invalid_value');
  const updated = await updateProvider(
    req.auth.workspaceId,
    slugParam,
    {
      name: body.name,
      provider: body.provider,
      settings: pick(body, PLAIN_SETTING_FIELDS),
      secrets: pick(body, SECRET_SETTING_FIELDS),
    },
    checkCredentials,
  );
  if (!updated) throw notFound(`No provider '${slugParam}' in this workspace.`, 'slug');
  log.info('managed provider updated', { slug: updated.slug, provider: updated.provider, secret_fields: updated.secret_fields }, req.context);
  return ok(toPublicProvider(updated));
}

async function remove(req: GatewayRequest) {
  const slugParam = providerSlug(req);
  const deleted = await deleteProvider(req.auth.workspaceId, slugParam);
  if (!deleted) throw notFound(`No provider '${slugParam}' in this workspace.`, 'slug');
  log.info('managed provider deleted', { slug: deleted.slug }, req.context);
  return ok({ object: 'provider.deleted', id: deleted.id, slug: deleted.slug, deleted: true });
}

/**
 * `GET /v1/providers/catalog`: every provider the gateway speaks to, its routes and required
 * settings, read off the registry. Loaded on first use: the adapters stay out of the admin
 * group's cold start. (`catalog` is not a valid managed-provider slug lookup: it is matched first.)
 */
async function catalog() {
  const { providerCatalog } = await import('../providers/catalog');
  return ok({ object: 'list', data: await providerCatalog() });
}

export const providerRoutes: Route[] = [
  { method: 'POST', path: '/v1/providers', access: 'workspace-admin', use: [idempotency], handler: create },
  { method: 'GET', path: '/v1/providers', access: 'viewer', handler: list },
  { method: 'GET', path: '/v1/providers/catalog', access: 'viewer', handler: catalog },
  { method: 'GET', path: '/v1/providers/{slug}', access: 'viewer', handler: get },
  { method: 'PUT', path: '/v1/providers/{slug}', access: 'workspace-admin', handler: update },
  { method: 'DELETE', path: '/v1/providers/{slug}', access: 'workspace-admin', handler: remove },
];

/** The body schemas, for the OpenAPI document (infra/openapi). */
export { createSchema, updateSchema };
