import { notFound } from '../../shared/errors';
import { ok } from '../../shared/http/response';
import type { GatewayRequest } from '../../shared/http/types';
import { log } from '../../shared/telemetry/logger';
import { z } from '../../shared/validation';
import { parseBody, pathId, route, type AssistantContext } from './http';
import { newMessageFrom } from '../store/messages';
import { threadInputSchema } from './run-input';
import { metadataSchema, toolResourcesSchema } from './schemas';
import { createThread, deleteThread, getThread, updateThread } from '../store/threads';

/** `/v1/threads`: create (with optional messages), retrieve, modify, delete. */

const updateSchema = z.strictObject({
  metadata: z.optional(z.nullable(metadataSchema)),
  tool_resources: z.optional(z.nullable(toolResourcesSchema)),
});

export const threadNotFound = (id: string) => notFound(`No thread found with id '${id}'.`, 'thread_id');
export const threadIdOf = (req: GatewayRequest) => pathId(req, 'thread_id', 'thread');

async function create(req: GatewayRequest, ctx: AssistantContext) {
  const body = parseBody(req, threadInputSchema);
  const messages = (body.messages ?? []).map((m, i) => newMessageFrom(m, `messages[${i}]`));
  const thread = await createThread(ctx.workspaceId, { metadata: body.metadata ?? {}, tool_resources: body.tool_resources ?? {} }, messages);
  log.info('thread created', { thread_id: thread.id, messages: messages.length }, req.context);
  return ok(thread);
}

async function get(req: GatewayRequest, ctx: AssistantContext) {
  const id = threadIdOf(req);
  const thread = await getThread(ctx.workspaceId, id);
  if (!thread) throw threadNotFound(id);
  return ok(thread);
}

async function update(req: GatewayRequest, ctx: AssistantContext) {
  const id = threadIdOf(req);
  const body = parseBody(req, updateSchema);
  const thread = await updateThread(ctx.workspaceId, id, {
    metadata: body.metadata === null ? {} : body.metadata,
    tool_resources: body.tool_resources,
  });
  if (!thread) throw threadNotFound(id);
  return ok(thread);
}

async function remove(req: GatewayRequest, ctx: AssistantContext) {
  const id = threadIdOf(req);
  if (!(await deleteThread(ctx.workspaceId, id))) throw threadNotFound(id);
  log.info('thread deleted', { thread_id: id }, req.context);
  return ok({ id, object: 'thread.deleted', deleted: true });
}

export const threadRoutes = [
  route('POST', '/v1/threads', create, { creates: true }),
  route('GET', '/v1/threads/{thread_id}', get),
  route('POST', '/v1/threads/{thread_id}', update),
  route('DELETE', '/v1/threads/{thread_id}', remove),
];

/** The body schema, for the OpenAPI document (infra/openapi). */
export { updateSchema };
