import { invalidState, notFound } from '../../shared/errors';
import { listObject, pageFromQuery } from '../../shared/http/list';
import { ok } from '../../shared/http/response';
import type { GatewayRequest } from '../../shared/http/types';
import { z } from '../../shared/validation';
import { parseBody, pathId, route, type AssistantContext } from './http';
import { addMessage, deleteMessage, getMessage, listMessages, newMessageFrom, updateMessage } from '../store/messages';
import { releaseStaleClaim } from '../store/runs';
import { MAX_ID_LENGTH } from '../store/db';
import { messageInputSchema, metadataSchema } from './schemas';
import { threadIdOf, threadNotFound } from './threads';
import { getThreadItem } from '../store/threads';
import { endIfExecutorGone } from '../workflow/recovery';

/** `/v1/threads/{thread_id}/messages`: create, list, retrieve, modify, delete. */

const updateSchema = z.strictObject({ metadata: z.optional(z.nullable(metadataSchema)) });

const messageIdOf = (req: GatewayRequest) => pathId(req, 'message_id', 'message');
const messageNotFound = (id: string) => notFound(`No message found with id '${id}'.`, 'message_id');

async function create(req: GatewayRequest, ctx: AssistantContext) {
  const threadId = threadIdOf(req);
  const message = newMessageFrom(parseBody(req, messageInputSchema), '');
  for (let attempt = 0; ; attempt++) {
    const result = await addMessage(ctx.workspaceId, threadId, message, { whenIdle: true });
    if ('message' in result) return ok(result.message);
    if ('missingThread' in result) throw threadNotFound(threadId);
    // A run holds the thread (as on OpenAI, messages wait until it ends), unless its claim is
    // stale or nothing executes the run any more.
    const ref = { workspaceId: ctx.workspaceId, threadId, runId: result.activeRunId };
    if (attempt > 0 || !((await releaseStaleClaim(ctx.workspaceId, threadId, result.activeRunId)) || (await endIfExecutorGone(ref)))) {
      throw invalidState(`Can't add messages to ${threadId} while a run ${result.activeRunId} is active.`, 'thread_run_active');
    }
  }
}

async function list(req: GatewayRequest, ctx: AssistantContext) {
  const threadId = threadIdOf(req);
  const page = pageFromQuery(req.query);
  const runId = req.query.run_id || undefined;
  // An over-long run id cannot exist: nothing matches.
  const matching =
    runId !== undefined && runId.length > MAX_ID_LENGTH ? Promise.resolve({ items: [], hasMore: false }) : listMessages(ctx.workspaceId, threadId, page, runId);
  const [thread, result] = await Promise.all([getThreadItem(ctx.workspaceId, threadId), matching]);
  if (!thread) throw threadNotFound(threadId);
  return ok(listObject(result.items, result.hasMore));
}

async function get(req: GatewayRequest, ctx: AssistantContext) {
  const threadId = threadIdOf(req);
  const id = messageIdOf(req);
  const message = await getMessage(ctx.workspaceId, threadId, id);
  if (!message) throw messageNotFound(id);
  return ok(message);
}

async function update(req: GatewayRequest, ctx: AssistantContext) {
  const threadId = threadIdOf(req);
  const id = messageIdOf(req);
  const body = parseBody(req, updateSchema);
  const message = await updateMessage(ctx.workspaceId, threadId, id, { metadata: body.metadata === null ? {} : body.metadata });
  if (!message) throw messageNotFound(id);
  return ok(message);
}

async function remove(req: GatewayRequest, ctx: AssistantContext) {
  const threadId = threadIdOf(req);
  const id = messageIdOf(req);
  if (!(await deleteMessage(ctx.workspaceId, threadId, id))) throw messageNotFound(id);
  return ok({ id, object: 'thread.message.deleted', deleted: true });
}

export const messageRoutes = [
  route('POST', '/v1/threads/{thread_id}/messages', create, { creates: true }),
  route('GET', '/v1/threads/{thread_id}/messages', list),
  route('GET', '/v1/threads/{thread_id}/messages/{message_id}', get),
  route('POST', '/v1/threads/{thread_id}/messages/{message_id}', update),
  route('DELETE', '/v1/threads/{thread_id}/messages/{message_id}', remove),
];

/** The body schema, for the OpenAPI document (infra/openapi). */
export { updateSchema };
