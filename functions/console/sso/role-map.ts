import { ROLES, roleRank } from '../../shared/auth/roles';
import type { Role } from '../../shared/http/types';

/**
 * SSO_ROLE_MAP (docs/console-sso.md): which gateway role a group of the issuer's role claim
 * grants, e.g. `{"gateway-admins": "org-admin", "team-a": "workspace-admin:team-a",
 * "auditors": "viewer"}`. A value is a role, optionally `:` and the workspace (id or slug)
 * it holds in; without one, the organisation's first workspace. A user in several mapped
 * groups gets the highest of their roles; in none, no session (sign-in is refused).
 */
export interface RoleGrant {
  role: Role;
  /** Workspace id or slug; undefined: the bootstrap workspace. */
  workspace?: string;
}

export function parseRoleMap(json: string): Map<string, RoleGrant> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    throw new Error('SSO_ROLE_MAP is not valid JSON: expected an object of group -> role, e.g. {"gateway-admins":"org-admin"}.');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('SSO_ROLE_MAP must be a JSON object of group -> role.');
  const map = new Map<string, RoleGrant>();
  for (const [group, value] of Object.entries(parsed)) {
    const [role, workspace, ...rest] = typeof value === 'string' ? value.split(':') : [];
    if (!ROLES.includes(role as Role) || rest.length > 0 || workspace === '') {
      throw new Error(`SSO_ROLE_MAP["${group}"] must be one of ${ROLES.join(', ')}, optionally followed by ':<workspace id or slug>'.`);
    }
    if (role === 'org-admin' && workspace !== undefined) throw new Error(`SSO_ROLE_MAP["${group}"]: org-admin holds in every workspace; name none.`);
    map.set(group, { role: role as Role, ...(workspace ? { workspace } : {}) });
  }
  return map;
}

/** The groups a claim value lists: an array of strings, or one string. */
function groupsOf(claim: unknown): string[] {
  if (typeof claim === 'string') return [claim];
  return Array.isArray(claim) ? claim.filter((g): g is string => typeof g === 'string') : [];
}

/** The highest grant of the user's groups (the first mapped one among equals), or undefined. */
export function grantFor(claim: unknown, map: ReadonlyMap<string, RoleGrant>): { group: string; grant: RoleGrant } | undefined {
  let best: { group: string; grant: RoleGrant } | undefined;
  for (const group of groupsOf(claim)) {
    const grant = map.get(group);
    if (grant && (!best || roleRank(grant.role) > roleRank(best.grant.role))) best = { group, grant };
  }
  return best;
}
