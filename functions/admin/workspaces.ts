import { notFound } from '../shared/errors';
import { listObject, pageFromQuery } from '../shared/http/list';
import { ok } from '../shared/http/response';
import type { GatewayRequest, Route } from '../shared/http/types';
import { checkWorkspaceRef } from '../shared/auth/roles';
import { createWorkspace, findWorkspace, getWorkspace, listWorkspaces } from '../shared/stores/workspaces';
import { parseInput, z } from '../shared/validation';
import { idempotency } from '../shared/http/idempotency';

const createSchema = z.strictObject({
  name: z.string().check(z.minLength(1), z.maxLength(128)),
  slug: z.optional(z.string().check(z.regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'lower-case letters, digits and dashes'))),
  description: z.optional(z.nullable(z.string().check(z.maxLength(1024)))),
});

async function create(req: GatewayRequest) {
  const body = parseInput(createSchema, req.json());
  const ws = await createWorkspace({
    organisationId: req.auth.organisationId,
    name: body.name,
    slug: body.slug,
    description: body.description ?? null,
  });
  return ok(ws);
}

/** An org-admin sees every workspace; a workspace admin its own only. */
async function list(req: GatewayRequest) {
  if (req.auth.role !== 'org-admin') {
    const own = await getWorkspace(req.auth.workspaceId);
    return ok(listObject(own ? [own] : [], false));
  }
  const page = await listWorkspaces(req.auth.organisationId, pageFromQuery(req.query, { order: 'asc' }));
  return ok(listObject(page.items, page.hasMore));
}

async function get(req: GatewayRequest) {
  await checkWorkspaceRef(req.auth, req.params.id, 'id');
  const ws = await findWorkspace(req.auth.organisationId, req.params.id!);
  if (!ws) throw notFound(`No workspace '${req.params.id}' in this organisation.`, 'id');
  return ok(ws);
}

export const workspaceRoutes: Route[] = [
  { method: 'POST', path: '/v1/workspaces', access: 'org-admin', use: [idempotency], handler: create },
  { method: 'GET', path: '/v1/workspaces', access: 'workspace-admin', handler: list },
  { method: 'GET', path: '/v1/workspaces/{id}', access: 'workspace-admin', handler: get },
];

/** The body schema, for the OpenAPI document (infra/openapi). */
export { createSchema };
