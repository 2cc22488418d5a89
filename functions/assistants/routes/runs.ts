import { badRequest, GatewayError, invalidState, notFound } from '../../shared/errors';
import { listObject, pageFromQuery } from '../../shared/http/list';
import { ok } from '../../shared/http/response';
import type { GatewayRequest } from '../../shared/http/types';
import { log } from '../../shared/telemetry/logger';
import { assistantProviderFromHeaders } from '../credentials';
import { z } from '../../shared/validation';
import { getAssistant } from '../store/assistants';
import { parseBody, pathId, route, type AssistantContext } from './http';
import { cancelRunNow } from '../engine/model-step';
import { executorLeaseUntil, loadRunState } from '../engine/state';
import { cancelRun, startRun, submitToolOutputs } from '../workflow/lifecycle';
import { cancelIfExecutorLost, endIfExecutorGone } from '../workflow/recovery';
import { expireIfDue } from '../engine/expiry';
import { newMessageFrom } from '../store/messages';
import { buildRunSpec, createRunSchema, createThreadAndRunSchema } from './run-input';
import {
  createRun,
  createThreadAndRun,
  getRun,
  listRuns,
  runRef,
  transitionRun,
  updateRunMetadata,
  type RunExecutor,
  type RunRecord,
  type RunRef,
} from '../store/runs';
import { metadataSchema } from './schemas';
import { streamNewRun, streamSubmit, submitInline } from './runs-stream';
import { getStep, listSteps } from '../store/steps';
import { threadIdOf, threadNotFound } from './threads';
import { getThreadItem } from '../store/threads';
import type { ToolOutput } from '../types';

/**
 * Runs: create (on a thread, or with a new thread), list, retrieve, modify
 * metadata, cancel, submit_tool_outputs, steps. The routes write the run record and hand
 * it to the lifecycle hooks (workflow/lifecycle.ts); execution happens there. With `stream: true`
 * the engine runs inline instead and the answer is the run's event stream (runs-stream.ts);
 * such an "inline" run is also continued and cancelled here, since no workflow holds it.
 */

const updateSchema = z.strictObject({ metadata: z.optional(z.nullable(metadataSchema)) });
const submitSchema = z.strictObject({
  tool_outputs: z
    .array(z.strictObject({ tool_call_id: z.string().check(z.minLength(1), z.maxLength(128)), output: z.string().check(z.maxLength(512 * 1024)) }))
    .check(z.minLength(1), z.maxLength(128)),
  stream: z.optional(z.nullable(z.boolean())),
});

const CANCELLABLE = ['queued', 'in_progress', 'requires_action'] as const;

const refOf = (req: GatewayRequest, ctx: AssistantContext): RunRef => ({
  workspaceId: ctx.workspaceId,
  threadId: threadIdOf(req),
  runId: pathId(req, 'run_id', 'run'),
});
const runNotFound = (id: string) => notFound(`No run found with id '${id}'.`, 'run_id');

async function loadRun(ref: RunRef): Promise<RunRecord> {
  const record = await getRun(ref);
  if (!record) throw runNotFound(ref.runId);
  return record;
}

async function loadAssistant(workspaceId: string, id: string) {
  const assistant = await getAssistant(workspaceId, id);
  if (!assistant) throw notFound(`No assistant found with id '${id}'.`, 'assistant_id');
  return assistant;
}

/** Hand a new run to the lifecycle; if that fails, the run fails rather than holding its thread. */
async function start(req: GatewayRequest, record: RunRecord) {
  try {
    await startRun(record);
  } catch (err) {
    await transitionRun(runRef(record), ['queued'], { status: 'failed', last_error: { code: 'server_error', message: 'The run could not be started.' } });
    throw err;
  }
  log.info('run created', { run_id: record.run.id, thread_id: record.run.thread_id, provider: record.provider }, req.context);
  return ok(record.run);
}

/**
 * A new run on a thread held by a run that nothing executes any more (its process died):
 * that run is ended now (workflow/recovery.ts) and the write tried once more.
 */
async function freeingStrandedClaim<T>(workspaceId: string, threadId: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (!(err instanceof GatewayError) || err.code !== 'thread_run_active') throw err;
    const holder = (await getThreadItem(workspaceId, threadId))?.active_run_id;
    if (!holder || !(await endIfExecutorGone({ workspaceId, threadId, runId: holder }))) throw err;
    return write();
  }
}

/** A streamed run is executed by its own request, under a lease, from its creation on. */
const executorOf = (stream: boolean | null | undefined): RunExecutor => (stream ? { inline: true, leaseUntil: executorLeaseUntil() } : { inline: false });

async function create(req: GatewayRequest, ctx: AssistantContext) {
  const threadId = threadIdOf(req);
  const body = parseBody(req, createRunSchema);
  const assistant = await loadAssistant(ctx.workspaceId, body.assistant_id);
  const spec = await buildRunSpec(ctx.workspaceId, body, assistant, assistantProviderFromHeaders(req));
  const messages = (body.additional_messages ?? []).map((m, i) => newMessageFrom(m, `additional_messages[${i}]`));
  const record = await freeingStrandedClaim(ctx.workspaceId, threadId, () => createRun(ctx.workspaceId, threadId, spec, messages, executorOf(body.stream)));
  return body.stream ? streamNewRun(req.context, record) : start(req, record);
}

async function createWithThread(req: GatewayRequest, ctx: AssistantContext) {
  const body = parseBody(req, createThreadAndRunSchema);
  const assistant = await loadAssistant(ctx.workspaceId, body.assistant_id);
  const spec = await buildRunSpec(ctx.workspaceId, body, assistant, assistantProviderFromHeaders(req));
  const messages = (body.thread?.messages ?? []).map((m, i) => newMessageFrom(m, `thread.messages[${i}]`));
  const fields = { metadata: body.thread?.metadata ?? {}, tool_resources: body.thread?.tool_resources ?? {} };
  const { thread, record } = await createThreadAndRun(ctx.workspaceId, fields, messages, spec, executorOf(body.stream));
  return body.stream ? streamNewRun(req.context, record, thread) : start(req, record);
}

async function list(req: GatewayRequest, ctx: AssistantContext) {
  const threadId = threadIdOf(req);
  const page = pageFromQuery(req.query);
  const [thread, result] = await Promise.all([getThreadItem(ctx.workspaceId, threadId), listRuns(ctx.workspaceId, threadId, page)]);
  if (!thread) throw threadNotFound(threadId);
  const runs = await Promise.all(result.items.map(async (r) => (await expireIfDue(r)).run));
  return ok(listObject(runs, result.hasMore));
}

/** A run past its `expires_at` never reads as active: it is expired as it is read. */
async function get(req: GatewayRequest, ctx: AssistantContext) {
  return ok((await expireIfDue(await loadRun(refOf(req, ctx)))).run);
}

async function update(req: GatewayRequest, ctx: AssistantContext) {
  const ref = refOf(req, ctx);
  const body = parseBody(req, updateSchema);
  if (body.metadata === undefined) return ok((await loadRun(ref)).run);
  const record = await updateRunMetadata(ref, body.metadata ?? {});
  if (!record) throw runNotFound(ref.runId);
  return ok(record.run);
}

async function cancel(req: GatewayRequest, ctx: AssistantContext) {
  const ref = refOf(req, ctx);
  const before = await loadRunState(ref);
  const record = await transitionRun(ref, CANCELLABLE, { status: 'cancelling' });
  if (!record) {
    const current = await loadRun(ref);
    throw invalidState(
      `Cannot cancel run ${ref.runId}: its status is '${current.run.status}' (cancellable: ${CANCELLABLE.join(', ')}).`,
      'run_not_cancellable',
    );
  }
  log.info('run cancelling', { run_id: ref.runId, thread_id: ref.threadId }, req.context);
  if (before?.state.inline) {
    // A streamed run: its request finishes the cancel if it is still calling the model;
    // waiting for tool outputs, nothing executes it, so it is cancelled now; and so is a
    // run whose executor is gone (its lease lapsed: the process died).
    if (before.record.run.status !== 'in_progress') return ok((await cancelRunNow(record))?.run ?? record.run);
    if (await cancelIfExecutorLost(ref)) return ok((await loadRun(ref)).run);
    return ok(record.run);
  }
  await cancelRun(record, req.context);
  return ok(record.run);
}

/** Every pending tool call answered once, and nothing else. */
function checkOutputs(record: RunRecord, outputs: ToolOutput[]): void {
  const pending = record.run.required_action?.submit_tool_outputs.tool_calls.map((c) => c.id) ?? [];
  const seen = new Set<string>();
  outputs.forEach((o, i) => {
    const field = `tool_outputs[${i}].tool_call_id`;
    if (!pending.includes(o.tool_call_id))
      throw badRequest(`Invalid \`${field}\`: '${o.tool_call_id}' is not a pending tool call of run ${record.run.id}.`, field, 'invalid_value');
    if (seen.has(o.tool_call_id)) throw badRequest(`Invalid \`${field}\`: '${o.tool_call_id}' is given twice.`, field, 'invalid_value');
    seen.add(o.tool_call_id);
  });
  const missing = pending.filter((id) => !seen.has(id));
  if (missing.length) throw badRequest(`Invalid \`tool_outputs\`: missing outputs for tool calls ${missing.join(', ')}.`, 'tool_outputs', 'invalid_value');
}

async function submit(req: GatewayRequest, ctx: AssistantContext) {
  const ref = refOf(req, ctx);
  const body = parseBody(req, submitSchema);
  const loaded = await loadRunState(ref);
  if (!loaded) throw runNotFound(ref.runId);
  const { record } = loaded;
  if (record.run.status !== 'requires_action') {
    throw invalidState(`Run ${ref.runId} is '${record.run.status}'; tool outputs are accepted only in 'requires_action'.`, 'run_not_requires_action');
  }
  checkOutputs(record, body.tool_outputs);
  if (body.stream) return streamSubmit(req.context, record, body.tool_outputs);
  if (loaded.state.inline) return ok(await submitInline(req.context, record, body.tool_outputs));
  const after = await submitToolOutputs(record, body.tool_outputs, req.context);
  return ok(after ?? record.run);
}

async function steps(req: GatewayRequest, ctx: AssistantContext) {
  const ref = refOf(req, ctx);
  const page = pageFromQuery(req.query);
  const [, result] = await Promise.all([loadRun(ref), listSteps(ref, page)]);
  return ok(listObject(result.items, result.hasMore));
}

async function step(req: GatewayRequest, ctx: AssistantContext) {
  const ref = refOf(req, ctx);
  const stepId = pathId(req, 'step_id', 'run step');
  const found = await getStep(ref, stepId);
  if (!found) throw notFound(`No run step found with id '${stepId}'.`, 'step_id');
  return ok(found);
}

export const runRoutes = [
  route('POST', '/v1/threads/runs', createWithThread, { creates: true }),
  route('POST', '/v1/threads/{thread_id}/runs', create, { creates: true }),
  route('GET', '/v1/threads/{thread_id}/runs', list),
  route('GET', '/v1/threads/{thread_id}/runs/{run_id}', get),
  route('POST', '/v1/threads/{thread_id}/runs/{run_id}', update),
  route('POST', '/v1/threads/{thread_id}/runs/{run_id}/cancel', cancel),
  route('POST', '/v1/threads/{thread_id}/runs/{run_id}/submit_tool_outputs', submit),
  route('GET', '/v1/threads/{thread_id}/runs/{run_id}/steps', steps),
  route('GET', '/v1/threads/{thread_id}/runs/{run_id}/steps/{step_id}', step),
];

/** The body schemas, for the OpenAPI document (infra/openapi). */
export { updateSchema, submitSchema };
