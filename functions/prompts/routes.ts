import { badRequest, notFound } from '../shared/errors';
import { listObject, pageFromQuery } from '../shared/http/list';
import { ok } from '../shared/http/response';
import type { GatewayRequest, Route } from '../shared/http/types';
import { getProvider } from '../shared/stores/providers';
import { log } from '../shared/telemetry/logger';
import { findByRef, selectByRef, versionNotFound } from './resolve';
import { MAX_VERSION_BYTES, parseCreateBody, parseUpdateBody, versionFields } from './schemas';
import { addVersion, createPrompt, deletePrompt, getVersion, listPrompts, listVersions, publishVersion } from './store';
import { validateTemplate } from './template';
import type { PromptVersion, VersionFields } from './types';
import { logged } from '../gateway/request-log';
import { completions, render } from './run';
import { promptSummary, promptWithVersion, updateResult, versionView } from './views';
import { idempotency } from '../shared/http/idempotency';

/**
 * `/v1/prompts`: templates and their immutable versions. Every
 * `{promptId}` takes the id or the slug, with `@latest`, `@<n>` or no suffix (Published).
 * On PUT the suffix picks the version that `patch: true` starts from (no suffix: the
 * latest, as the API contract says); on DELETE it is checked and the whole template is deleted.
 */

const MAX_COLLECTION_ID = 128;

/** A version must be runnable: its template parses, and it fits one item. */
function checkVersion(fields: VersionFields): void {
  validateTemplate(fields.string, fields.is_raw_template === 1);
  if ('messages' in fields.parameters) {
    throw badRequest('Invalid `parameters.messages`: the messages come from `string`.', 'parameters', 'invalid_value');
  }
  const bytes = Buffer.byteLength(JSON.stringify(fields), 'utf8');
  if (bytes > MAX_VERSION_BYTES) {
    throw badRequest(`The version is ${bytes} bytes; a version holds at most ${MAX_VERSION_BYTES} bytes.`, 'string', 'too_large');
  }
}

async function checkVirtualKey(workspaceId: string, slug: string | null | undefined): Promise<void> {
  if (!slug) return;
  if (!(await getProvider(workspaceId, slug))) {
    throw badRequest(
      `Invalid \`virtual_key\`: no managed provider '@${slug}' in this workspace. Create it with POST /v1/providers.`,
      'virtual_key',
      'provider_not_found',
    );
  }
}

async function create(req: GatewayRequest) {
  const body = parseCreateBody(req.json());
  const fields = versionFields(body);
  checkVersion(fields);
  await checkVirtualKey(req.auth.workspaceId, fields.virtual_key);
  const { prompt, version } = await createPrompt(req.auth.workspaceId, { name: body.name, collection_id: body.collection_id ?? null, fields });
  log.info('prompt created', { prompt_id: prompt.id, slug: prompt.slug, prompt_version_id: version.prompt_version_id }, req.context);
  return ok(updateResult(prompt, version));
}

async function list(req: GatewayRequest) {
  const collectionId = req.query.collection_id || undefined;
  if (collectionId && collectionId.length > MAX_COLLECTION_ID) {
    throw badRequest(`Invalid \`collection_id\`: at most ${MAX_COLLECTION_ID} characters.`, 'collection_id', 'invalid_value');
  }
  const page = await listPrompts(req.auth.workspaceId, pageFromQuery(req.query, { order: 'desc' }), collectionId);
  return ok(listObject(page.items.map(promptSummary), page.hasMore));
}

async function get(req: GatewayRequest) {
  const { prompt, version } = await selectByRef(req.auth.workspaceId, req.params.promptId!);
  return ok(promptWithVersion(prompt, version));
}

async function update(req: GatewayRequest) {
  const workspaceId = req.auth.workspaceId;
  const body = parseUpdateBody(req.json());
  const { ref, prompt } = await findByRef(workspaceId, req.params.promptId!);
  // `@<n>` fixes the version a patch starts from; otherwise the latest at write time.
  let fixedBase: PromptVersion | undefined;
  if (ref.selector.kind === 'number') {
    fixedBase = await getVersion(workspaceId, prompt.id, ref.selector.n);
    if (!fixedBase) throw versionNotFound(ref.raw, ref.selector.n);
  }
  await checkVirtualKey(workspaceId, body.virtual_key);
  const result = await addVersion(workspaceId, prompt.id, (_current, latest) => {
    const fields = versionFields(body, body.patch === true ? (fixedBase ?? latest) : undefined);
    checkVersion(fields);
    return { fields, name: body.name, collection_id: body.collection_id };
  });
  if (!result) throw notFound(`No prompt template '${ref.raw.slice(0, 160)}' in this workspace.`, 'promptId');
  log.info('prompt updated', { prompt_id: prompt.id, version: result.version.version, patch: body.patch === true }, req.context);
  return ok(updateResult(result.prompt, result.version));
}

async function remove(req: GatewayRequest) {
  const { prompt } = await selectByRef(req.auth.workspaceId, req.params.promptId!);
  const deleted = await deletePrompt(req.auth.workspaceId, prompt);
  if (!deleted) throw notFound(`No prompt template '${req.params.promptId!.slice(0, 160)}' in this workspace.`, 'promptId');
  log.info('prompt deleted', { prompt_id: prompt.id, slug: prompt.slug }, req.context);
  return ok({ object: 'prompt.deleted', id: prompt.id, slug: prompt.slug, deleted: true });
}

async function versions(req: GatewayRequest) {
  const { prompt } = await selectByRef(req.auth.workspaceId, req.params.promptId!);
  const page = await listVersions(req.auth.workspaceId, prompt.id, pageFromQuery(req.query, { order: 'desc' }));
  return ok(
    listObject(
      page.items.map((v) => versionView(prompt, v)),
      page.hasMore,
    ),
  );
}

async function publish(req: GatewayRequest) {
  const workspaceId = req.auth.workspaceId;
  const { ref, prompt } = await findByRef(workspaceId, req.params.promptId!);
  const raw = req.params.version!;
  if (!/^[0-9]{1,9}$/.test(raw)) {
    throw badRequest(`Invalid \`version\`: expected a version number, got '${raw.slice(0, 32)}'.`, 'version', 'invalid_value');
  }
  const version = await getVersion(workspaceId, prompt.id, Number(raw));
  if (!version) throw versionNotFound(ref.ref, raw);
  const published = await publishVersion(workspaceId, prompt.id, version);
  if (!published) throw notFound(`No prompt template '${ref.raw.slice(0, 160)}' in this workspace.`, 'promptId');
  log.info('prompt version published', { prompt_id: prompt.id, version: version.version }, req.context);
  return ok(promptWithVersion(published, version));
}

export const promptRoutes: Route[] = [
  { method: 'POST', path: '/v1/prompts', access: 'workspace-admin', name: 'prompts.create', use: [idempotency], handler: create },
  { method: 'GET', path: '/v1/prompts', access: 'member', name: 'prompts.list', handler: list },
  { method: 'GET', path: '/v1/prompts/{promptId}', access: 'member', name: 'prompts.get', handler: get },
  { method: 'PUT', path: '/v1/prompts/{promptId}', access: 'workspace-admin', name: 'prompts.update', use: [idempotency], handler: update },
  { method: 'DELETE', path: '/v1/prompts/{promptId}', access: 'workspace-admin', name: 'prompts.delete', handler: remove },
  { method: 'GET', path: '/v1/prompts/{promptId}/versions', access: 'member', name: 'prompts.versions', handler: versions },
  { method: 'PUT', path: '/v1/prompts/{promptId}/versions/{version}/publish', access: 'workspace-admin', name: 'prompts.publish', handler: publish },
  { method: 'POST', path: '/v1/prompts/{promptId}/render', access: 'gateway', name: 'prompts.render', handler: render },
  {
    method: 'POST',
    path: '/v1/prompts/{promptId}/completions',
    access: 'gateway',
    ...logged('prompts.completions', idempotency),
    handler: completions,
  },
];
