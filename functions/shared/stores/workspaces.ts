import { getItem, putNew } from '../db/ops';
import { listPage, type Page, type PageRequest } from '../db/list';
import { alreadyExists } from '../errors';
import { uuid } from '../ids';

export interface Organisation {
  id: string;
  name: string;
  created_at: number;
}

export interface Workspace {
  object: 'workspace';
  id: string;
  slug: string;
  name: string;
  description: string | null;
  organisation_id: string;
  created_at: number;
}

const now = () => Math.floor(Date.now() / 1000);
const orgWorkspacesPartition = (orgId: string) => `ORG#${orgId}#WS`;

/** URL-friendly slug: lower-case words joined by dashes. */
export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64);
  return slug || 'item';
}

export async function createOrganisation(name: string): Promise<Organisation> {
  const org: Organisation = { id: uuid(), name, created_at: now() };
  await putNew('control', { pk: `ORG#${org.id}`, sk: 'ORG', ...org });
  return org;
}

export async function getOrganisation(id: string): Promise<Organisation | undefined> {
  return getItem<Organisation & { pk: string; sk: string }>('control', { pk: `ORG#${id}`, sk: 'ORG' });
}

export async function createWorkspace(input: { organisationId: string; name: string; slug?: string; description?: string | null }): Promise<Workspace> {
  const slug = input.slug ?? slugify(input.name);
  const ws: Workspace = {
    object: 'workspace',
    id: uuid(),
    slug,
    name: input.name,
    description: input.description ?? null,
    organisation_id: input.organisationId,
    created_at: now(),
  };
  // The slug is claimed first so two workspaces of one organisation never share it.
  const claimed = await putNew('control', { pk: `ORG#${input.organisationId}#WSSLUG`, sk: slug, workspace_id: ws.id });
  if (!claimed) throw alreadyExists(`A workspace with slug '${slug}' already exists in this organisation.`, 'slug_taken');
  await putNew('control', {
    pk: `WS#${ws.id}`,
    sk: 'WS',
    gsi1pk: orgWorkspacesPartition(input.organisationId),
    gsi1sk: ws.id,
    ...ws,
  });
  return ws;
}

const strip = (item: Record<string, unknown>): Workspace => {
  const { pk: _pk, sk: _sk, gsi1pk: _g1, gsi1sk: _g2, ...rest } = item;
  return rest as unknown as Workspace;
};

export async function getWorkspace(id: string): Promise<Workspace | undefined> {
  const item = await getItem('control', { pk: `WS#${id}`, sk: 'WS' });
  return item ? strip(item) : undefined;
}

/** A workspace of the given organisation, by id or slug; undefined for other organisations. */
export async function findWorkspace(organisationId: string, idOrSlug: string): Promise<Workspace | undefined> {
  const byId = await getWorkspace(idOrSlug);
  if (byId) return byId.organisation_id === organisationId ? byId : undefined;
  const slug = await getItem<{ workspace_id: string; pk: string; sk: string }>('control', {
    pk: `ORG#${organisationId}#WSSLUG`,
    sk: idOrSlug,
  });
  return slug ? getWorkspace(slug.workspace_id) : undefined;
}

export async function listWorkspaces(organisationId: string, page: PageRequest): Promise<Page<Workspace>> {
  const result = await listPage({ table: 'control', index: 'gsi1', partition: orgWorkspacesPartition(organisationId), prefix: '' }, page);
  return { items: result.items.map(strip), hasMore: result.hasMore };
}
