import { notFound } from '../../shared/errors';
import { listObject, pageFromQuery } from '../../shared/http/list';
import { ok } from '../../shared/http/response';
import type { GatewayRequest } from '../../shared/http/types';
import { log } from '../../shared/telemetry/logger';
import { z } from '../../shared/validation';
import { createAssistant, deleteAssistant, getAssistant, listAssistants, updateAssistant, type AssistantFields } from '../store/assistants';
import { assistantProviderFromHeaders, PROVIDER_REF, requireManagedProvider } from '../credentials';
import { parseBody, pathId, route, type AssistantContext } from './http';
import { metadataSchema, modelSchema, responseFormatSchema, temperatureSchema, toolResourcesSchema, toolsSchema, topPSchema } from './schemas';

/** `/v1/assistants`: create, list, retrieve, modify, delete (OpenAI Assistants v2 shapes). */

const nullableText = (max: number) => z.optional(z.nullable(z.string().check(z.maxLength(max))));
const fields = {
  name: nullableText(256),
  description: nullableText(512),
  instructions: nullableText(256_000),
  tools: z.optional(z.nullable(toolsSchema)),
  tool_resources: z.optional(z.nullable(toolResourcesSchema)),
  metadata: z.optional(z.nullable(metadataSchema)),
  temperature: z.optional(z.nullable(temperatureSchema)),
  top_p: z.optional(z.nullable(topPSchema)),
  response_format: z.optional(z.nullable(responseFormatSchema)),
  /** Extension: the managed provider to bind, `@slug`. */
  provider: z.optional(z.string().check(z.regex(PROVIDER_REF, 'expected `@` followed by a managed provider slug'))),
};
const createSchema = z.strictObject({ model: modelSchema, ...fields });
const updateSchema = z.strictObject({ model: z.optional(modelSchema), ...fields });

const assistantNotFound = (id: string) => notFound(`No assistant found with id '${id}'.`, 'assistant_id');

async function create(req: GatewayRequest, ctx: AssistantContext) {
  const body = parseBody(req, createSchema);
  const slug = await requireManagedProvider(
    ctx.workspaceId,
    body.provider?.slice(1) ?? assistantProviderFromHeaders(req),
    body.provider ? 'provider' : 'x-gateway-provider',
  );
  const assistant = await createAssistant(ctx.workspaceId, {
    model: body.model,
    name: body.name ?? null,
    description: body.description ?? null,
    instructions: body.instructions ?? null,
    tools: body.tools ?? [],
    tool_resources: body.tool_resources ?? {},
    metadata: body.metadata ?? {},
    temperature: body.temperature ?? 1,
    top_p: body.top_p ?? 1,
    response_format: body.response_format ?? 'auto',
    provider: slug,
  });
  log.info('assistant created', { assistant_id: assistant.id, provider: slug }, req.context);
  return ok(assistant);
}

async function list(req: GatewayRequest, ctx: AssistantContext) {
  const page = await listAssistants(ctx.workspaceId, pageFromQuery(req.query));
  return ok(listObject(page.items, page.hasMore));
}

async function get(req: GatewayRequest, ctx: AssistantContext) {
  const id = pathId(req, 'assistant_id', 'assistant');
  const found = await getAssistant(ctx.workspaceId, id);
  if (!found) throw assistantNotFound(id);
  return ok(found);
}

async function update(req: GatewayRequest, ctx: AssistantContext) {
  const id = pathId(req, 'assistant_id', 'assistant');
  const body = parseBody(req, updateSchema);
  const patch: Partial<AssistantFields> = {
    model: body.model,
    name: body.name,
    description: body.description,
    instructions: body.instructions,
    tools: body.tools === null ? [] : body.tools,
    tool_resources: body.tool_resources,
    metadata: body.metadata === null ? {} : body.metadata,
    temperature: body.temperature === null ? 1 : body.temperature,
    top_p: body.top_p === null ? 1 : body.top_p,
    response_format: body.response_format === null ? 'auto' : body.response_format,
  };
  if (body.provider) patch.provider = await requireManagedProvider(ctx.workspaceId, body.provider.slice(1), 'provider');
  const changes = Object.values(patch).some((v) => v !== undefined);
  const current = await getAssistant(ctx.workspaceId, id);
  if (!current) throw assistantNotFound(id);
  if (!changes) return ok(current);
  const updated = await updateAssistant(ctx.workspaceId, id, patch);
  if (!updated) throw assistantNotFound(id);
  return ok(updated);
}

async function remove(req: GatewayRequest, ctx: AssistantContext) {
  const id = pathId(req, 'assistant_id', 'assistant');
  if (!(await deleteAssistant(ctx.workspaceId, id))) throw assistantNotFound(id);
  log.info('assistant deleted', { assistant_id: id }, req.context);
  return ok({ id, object: 'assistant.deleted', deleted: true });
}

export const assistantRoutes = [
  route('POST', '/v1/assistants', create, { creates: true }),
  route('GET', '/v1/assistants', list),
  route('GET', '/v1/assistants/{assistant_id}', get),
  route('POST', '/v1/assistants/{assistant_id}', update),
  route('DELETE', '/v1/assistants/{assistant_id}', remove),
];

/** The body schemas, for the OpenAPI document (infra/openapi). */
export { createSchema, updateSchema };
