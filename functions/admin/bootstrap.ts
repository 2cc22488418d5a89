import { BOOTSTRAP_MARKER } from '../shared/auth/roles';
import { getItem, putNew } from '../shared/db/ops';
import { createApiKey, findKeyBySecret } from '../shared/stores/keys';
import { createOrganisation, createWorkspace, getWorkspace, type Workspace } from '../shared/stores/workspaces';

const BOOTSTRAP_KEY = BOOTSTRAP_MARKER;

export interface BootstrapResult {
  organisationId: string;
  workspace: Workspace;
  /** The admin key secret when this call created it; undefined when it already existed. */
  createdSecret?: string;
}

/**
 * First start: one organisation, a `default` workspace and an `org-admin` key with the `gateway` scope. Idempotent:
 * later calls return the same organisation and workspace and register `adminSecret`
 * (if given and unknown) instead of making a new key. Used by `npm start` and by the
 * deploy-time custom resource on AWS.
 */
export async function bootstrap(adminSecret?: string): Promise<BootstrapResult> {
  let marker = await getItem<{ organisation_id: string; workspace_id: string; pk: string; sk: string }>('control', BOOTSTRAP_KEY, true);
  if (!marker) {
    const org = await createOrganisation('Default organisation');
    const ws = await createWorkspace({ organisationId: org.id, name: 'Default', slug: 'default' });
    const claimed = await putNew('control', { ...BOOTSTRAP_KEY, organisation_id: org.id, workspace_id: ws.id });
    marker = claimed ? { ...BOOTSTRAP_KEY, organisation_id: org.id, workspace_id: ws.id } : await getItem('control', BOOTSTRAP_KEY, true);
    if (!marker) throw new Error('bootstrap marker vanished');
  }
  const workspace = await getWorkspace(marker.workspace_id);
  if (!workspace) throw new Error(`bootstrap workspace ${marker.workspace_id} is missing`);
  if (adminSecret && (await findKeyBySecret(adminSecret))) {
    return { organisationId: marker.organisation_id, workspace };
  }
  const { secret } = await createApiKey({
    name: 'bootstrap admin',
    workspaceId: workspace.id,
    organisationId: marker.organisation_id,
    role: 'org-admin',
    scopes: ['gateway'],
    expiresAt: null,
    secret: adminSecret,
  });
  return { organisationId: marker.organisation_id, workspace, createdSecret: secret };
}
