import { badRequest, GatewayError, notFound } from '../shared/errors';
import { ok } from '../shared/http/response';
import type { AuthContext, GatewayRequest, Route } from '../shared/http/types';
import { findWorkspace, listWorkspaces } from '../shared/stores/workspaces';
import { queryEnum } from '../shared/validation';
import { BASE_DIMENSIONS, MAX_SPEND_METADATA_KEY_CHARS, METADATA_DIMENSION_PREFIX, type Dimension } from './dimensions';
import { GRANULARITIES, isoSeconds, reportRange } from './periods';
import { spendReport } from './report';

const MAX_REF_LENGTH = 128;
const WORKSPACES_PAGE = 100;

/** `group_by`: a base dimension or `metadata.<key>`; anything else is a 400 naming it. */
export function parseGroupBy(value: string | undefined): Dimension {
  if (value === undefined || value === '') return 'workspace';
  if ((BASE_DIMENSIONS as readonly string[]).includes(value)) return value as Dimension;
  if (value.startsWith(METADATA_DIMENSION_PREFIX)) {
    const key = value.slice(METADATA_DIMENSION_PREFIX.length);
    if (key !== '' && key.length <= MAX_SPEND_METADATA_KEY_CHARS) return `${METADATA_DIMENSION_PREFIX}${key}`;
    throw badRequest(
      `Invalid \`group_by\`: \`metadata.<key>\` needs a key of 1 to ${MAX_SPEND_METADATA_KEY_CHARS} characters, e.g. metadata._user.`,
      'group_by',
      'invalid_value',
    );
  }
  throw badRequest(
    `Invalid \`group_by\`: expected one of ${BASE_DIMENSIONS.join(', ')} or metadata.<key>, got '${value.slice(0, MAX_REF_LENGTH)}'.`,
    'group_by',
    'invalid_value',
  );
}

const isOrganisationAdmin = (auth: AuthContext) => auth.role === 'org-admin';

async function organisationWorkspaces(organisationId: string): Promise<string[]> {
  const ids: string[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await listWorkspaces(organisationId, { limit: WORKSPACES_PAGE, order: 'asc', ...(after ? { after } : {}) });
    ids.push(...page.items.map((w) => w.id));
    if (!page.hasMore || page.items.length === 0) return ids;
    after = page.items[page.items.length - 1]!.id;
  }
}

/**
 * Whose spend a request reads. An `org-admin` key: the
 * whole organisation, or the workspace `workspace_id` names (id or slug; one outside the
 * organisation is a 404, as in the policies API). Any other key: its own workspace only;
 * naming another is a 403, whether or not that workspace exists.
 */
async function reportWorkspaces(req: GatewayRequest): Promise<{ workspaceId: string | null; workspaceIds: string[] }> {
  const { auth } = req;
  const ref = req.query.workspace_id;
  const own = { workspaceId: auth.workspaceId, workspaceIds: [auth.workspaceId] };
  if (!isOrganisationAdmin(auth)) {
    if (ref === undefined || ref === '' || ref === auth.workspaceId) return own;
    const ws = ref.length <= MAX_REF_LENGTH ? await findWorkspace(auth.organisationId, ref) : undefined;
    if (ws?.id === auth.workspaceId) return own;
    throw new GatewayError(
      403,
      'permission_error',
      "A key below `org-admin` reads its own workspace's spend only: omit `workspace_id` or name the key's workspace.",
      'workspace_id',
      'insufficient_role',
    );
  }
  if (ref === undefined || ref === '') return { workspaceId: null, workspaceIds: await organisationWorkspaces(auth.organisationId) };
  if (ref === auth.workspaceId) return own;
  const ws = ref.length <= MAX_REF_LENGTH ? await findWorkspace(auth.organisationId, ref) : undefined;
  if (!ws) throw notFound(`No workspace '${ref.slice(0, MAX_REF_LENGTH)}' in this organisation.`, 'workspace_id');
  return { workspaceId: ws.id, workspaceIds: [ws.id] };
}

/**
 * `GET /v1/analytics/spend`: requests, tokens and cost per period and group, summed from
 * the hourly counters requests add to as they are logged (never from the logs).
 */
async function report(req: GatewayRequest) {
  const q = req.query;
  const dimension = parseGroupBy(q.group_by);
  const granularity = queryEnum(q.granularity, 'granularity', GRANULARITIES, 'day');
  const nowSeconds = Math.floor(Date.now() / 1000);
  const range = reportRange(q, granularity, nowSeconds);
  const scope = await reportWorkspaces(req);
  const { data, totals } = await spendReport({ dimension, granularity, range, workspaceIds: scope.workspaceIds, nowSeconds });
  return ok({
    object: 'list',
    group_by: dimension,
    granularity,
    from: isoSeconds(range.from),
    to: isoSeconds(range.to),
    organisation_id: req.auth.organisationId,
    workspace_id: scope.workspaceId,
    data,
    totals,
  });
}

export const spendRoutes: Route[] = [{ method: 'GET', path: '/v1/analytics/spend', access: 'member', handler: report }];
