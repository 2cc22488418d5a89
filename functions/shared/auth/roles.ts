import { getItem } from '../db/ops';
import { GatewayError } from '../errors';
import type { Access, AuthContext, Role } from '../http/types';
import type { ApiKeyRecord } from '../stores/keys';
import { findWorkspace } from '../stores/workspaces';

/** Lowest first. A key grants, changes and revokes keys of its own rank or lower only. */
export const ROLES = ['viewer', 'member', 'workspace-admin', 'org-admin'] as const satisfies readonly Role[];

export const roleRank = (role: Role): number => ROLES.indexOf(role);

export const atLeast = (held: Role, needed: Role): boolean => roleRank(held) >= roleRank(needed);

/** The control-table item `bootstrap` writes once: the organisation's first workspace. */
export const BOOTSTRAP_MARKER = { pk: 'BOOTSTRAP', sk: 'BOOTSTRAP' };

/** Written once and never changed, so one read per container is enough. */
let bootstrapWorkspace: Promise<string | undefined> | undefined;

function bootstrapWorkspaceId(): Promise<string | undefined> {
  bootstrapWorkspace ??= getItem<{ workspace_id: string }>('control', BOOTSTRAP_MARKER, true).then(
    (marker) => marker?.workspace_id,
    (err: unknown) => {
      bootstrapWorkspace = undefined;
      throw err;
    },
  );
  return bootstrapWorkspace;
}

/**
 * A key's role. Keys made before roles existed have none stored: the old organisation-wide
 * `admin` scope reads as `org-admin` only on a key of the bootstrap workspace (the
 * bootstrap key, and the admin keys its holder made there), and as `workspace-admin` of
 * its own workspace anywhere else; a key without `admin` reads as `member`.
 */
export async function roleOf(record: ApiKeyRecord): Promise<Role> {
  if (record.role) return record.role;
  if (!record.scopes.includes('admin')) return 'member';
  return (await bootstrapWorkspaceId()) === record.workspace_id ? 'org-admin' : 'workspace-admin';
}

export const insufficientRole = (message: string, param: string | null = null) =>
  new GatewayError(403, 'permission_error', message, param, 'insufficient_role');

/**
 * Which roles each route access admits. `member` (logs, spend, prompts' reads) is open to
 * every role; `viewer` (reads of the admin objects: keys, providers, configs, policies...)
 * is not open to members, who only use models; `gateway` (model traffic) also needs the
 * `gateway` scope.
 */
const ADMITTED: Record<Exclude<Access, 'public'>, readonly Role[]> = {
  gateway: ['member', 'workspace-admin', 'org-admin'],
  member: ROLES,
  viewer: ['viewer', 'workspace-admin', 'org-admin'],
  'workspace-admin': ['workspace-admin', 'org-admin'],
  'org-admin': ['org-admin'],
};

const listRoles = (roles: readonly Role[]) => roles.map((role) => `\`${role}\``).join(', ');

/** Whether the key may use a route of this access (roles and the `gateway` scope). */
export function authorize(auth: AuthContext, access: Access): void {
  if (access === 'public') return;
  if (!ADMITTED[access].includes(auth.role)) {
    const what = access === 'gateway' ? 'This route carries model traffic: it is open to' : 'This route is open to';
    throw insufficientRole(`${what} ${listRoles(ADMITTED[access])}; this key's role is \`${auth.role}\`.`);
  }
  if (access === 'gateway' && !auth.scopes.includes('gateway')) {
    throw insufficientRole(`This route carries model traffic: it needs the \`gateway\` scope, which this key (role \`${auth.role}\`) lacks.`);
  }
}

const MAX_WORKSPACE_REF = 128;

/**
 * A key below `org-admin` acts in its own workspace only: naming any other (by id or slug,
 * existing or not) is a 403 that says nothing about it.
 */
export async function checkWorkspaceRef(auth: AuthContext, ref: unknown, param: string): Promise<void> {
  if (auth.role === 'org-admin' || ref === undefined || ref === '' || ref === auth.workspaceId) return;
  if (typeof ref === 'string' && ref.length <= MAX_WORKSPACE_REF) {
    const ws = await findWorkspace(auth.organisationId, ref);
    if (ws?.id === auth.workspaceId) return;
  }
  throw insufficientRole(
    `Only an \`org-admin\` key may name another workspace; this key's role is \`${auth.role}\` in workspace '${auth.workspaceId}'.`,
    param,
  );
}
