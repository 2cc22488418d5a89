import { getItem, updateItem } from '../../shared/db/ops';
import { listPage, type Page, type PageRequest } from '../../shared/db/list';
import { invalidState, notFound } from '../../shared/errors';
import { ID_PREFIX, newId } from '../../shared/ids';
import { KEY } from '../../shared/tables';
import { asItem, fromJson, RUN_PREFIX, runKey, threadKey, threadPk, toJson, transact, txPut, txUpdate } from './db';
import { messageItem, type NewMessage } from './messages';
import { getThreadItem, threadFromItem, threadItem, writeInitialMessages, type ThreadFields } from './threads';
import { ACTIVE_RUN_STATUSES, isTerminal, nowSeconds, type Metadata, type Run, type RunStatus, type Thread, type Tool, type ToolChoice } from '../types';

/**
 * The run record and its state transitions.
 *
 * - createRun / createThreadAndRun write the run `queued` and claim its thread in ONE
 *   transaction: the thread's `active_run_id` is set only if absent, so a second active
 *   run on a thread is refused (400, as on OpenAI).
 * - transitionRun is the only way a status changes: a conditional write (`status IN from`);
 *   terminal states never change; entering a terminal state releases the thread claim in
 *   the same transaction.
 * - An active run is in the sparse index of active runs (gsi1, `ACTIVE_RUN#<shard>`), which
 *   the run reconciler reads (workflow/recovery.ts); entering a terminal state leaves it.
 */

/** Partitions of the active-runs index: a run's is fixed by its id. */
export const ACTIVE_RUN_SHARDS = 4;
const ACTIVE_RUN_PREFIX = 'ACTIVE_RUN#';
const activeRunPartition = (runId: string) => {
  let h = 0;
  for (let i = 0; i < runId.length; i++) h = (h * 31 + runId.charCodeAt(i)) >>> 0;
  return `${ACTIVE_RUN_PREFIX}${h % ACTIVE_RUN_SHARDS}`;
};
const ACTIVE_INDEX_KEYS = [KEY.gsi1pk, KEY.gsi1sk];

/**
 * The thread's claim: the active run's id, and when that run expires at the latest (so a
 * claim whose run cannot be read is released only once it is stale: releaseExpiredClaim).
 */
const CLAIM_EXPIRES = 'active_run_expires_at';
const CLAIM_ATTRIBUTES = ['active_run_id', CLAIM_EXPIRES];

/** Lifetime of a run before it expires (OpenAI: 10 minutes). */
export const RUN_TTL_SECONDS = 600;

/** A run plus what only the gateway knows: its workspace and managed provider slug. */
export interface RunRecord {
  run: Run;
  workspaceId: string;
  /** Managed provider slug (without `@`) the run calls the model with. */
  provider: string;
}

export interface RunRef {
  workspaceId: string;
  threadId: string;
  runId: string;
}
export const runRef = (r: RunRecord): RunRef => ({ workspaceId: r.workspaceId, threadId: r.run.thread_id, runId: r.run.id });

/** Everything a run is created with (after defaults and the assistant's values are applied). */
export type RunSpec = Pick<
  Run,
  | 'assistant_id'
  | 'model'
  | 'instructions'
  | 'tools'
  | 'metadata'
  | 'temperature'
  | 'top_p'
  | 'max_prompt_tokens'
  | 'max_completion_tokens'
  | 'truncation_strategy'
  | 'tool_choice'
  | 'parallel_tool_calls'
  | 'response_format'
> & { provider: string };

/** Fields a transition may write besides `status`. */
export type RunPatch = { status: RunStatus } & Partial<
  Pick<Run, 'required_action' | 'last_error' | 'expires_at' | 'started_at' | 'cancelled_at' | 'failed_at' | 'completed_at' | 'incomplete_details' | 'usage'>
>;

type RunItem = Omit<Run, 'object' | 'tools' | 'metadata' | 'tool_choice' | 'response_format'> & {
  pk: string;
  sk: string;
  /** While active: the active-runs index. */
  gsi1pk?: string;
  gsi1sk?: string;
  /** Executed inline by a streaming request (engine/state.ts), and until when its executor holds it (ms). */
  engine_inline?: boolean;
  executor_lease_until?: number;
  workspace_id: string;
  provider: string;
  tools_json: string;
  metadata_json: string;
  tool_choice_json: string;
  response_format_json: string;
};

function fromItem(item: RunItem): RunRecord {
  const run: Run = {
    id: item.id,
    object: 'thread.run',
    created_at: item.created_at,
    thread_id: item.thread_id,
    assistant_id: item.assistant_id,
    status: item.status,
    required_action: item.required_action ?? null,
    last_error: item.last_error ?? null,
    expires_at: item.expires_at ?? null,
    started_at: item.started_at ?? null,
    cancelled_at: item.cancelled_at ?? null,
    failed_at: item.failed_at ?? null,
    completed_at: item.completed_at ?? null,
    incomplete_details: item.incomplete_details ?? null,
    model: item.model,
    instructions: item.instructions,
    tools: fromJson<Tool[]>(item.tools_json, []),
    metadata: fromJson<Metadata>(item.metadata_json, {}),
    usage: item.usage ?? null,
    temperature: item.temperature ?? null,
    top_p: item.top_p ?? null,
    max_prompt_tokens: item.max_prompt_tokens ?? null,
    max_completion_tokens: item.max_completion_tokens ?? null,
    truncation_strategy: item.truncation_strategy ?? { type: 'auto', last_messages: null },
    tool_choice: fromJson<ToolChoice>(item.tool_choice_json, 'auto'),
    parallel_tool_calls: item.parallel_tool_calls ?? true,
    response_format: fromJson<Run['response_format']>(item.response_format_json, 'auto'),
  };
  return { run, workspaceId: item.workspace_id, provider: item.provider };
}

/**
 * Who executes a new run: the workflow (queue, then an execution), or the streaming request
 * that created it (`inline`), which holds it under a lease until `leaseUntil` (ms).
 */
export type RunExecutor = { inline: false } | { inline: true; leaseUntil: number };

function runItem(workspaceId: string, threadId: string, spec: RunSpec, createdAt: number, executor: RunExecutor): RunItem {
  const id = newId(ID_PREFIX.run);
  const { tools, metadata, tool_choice, response_format, provider, ...rest } = spec;
  return {
    ...runKey(workspaceId, threadId, id),
    gsi1pk: activeRunPartition(id),
    gsi1sk: id,
    ...(executor.inline ? { engine_inline: true, executor_lease_until: executor.leaseUntil } : {}),
    workspace_id: workspaceId,
    provider,
    id,
    created_at: createdAt,
    thread_id: threadId,
    status: 'queued',
    required_action: null,
    last_error: null,
    expires_at: createdAt + RUN_TTL_SECONDS,
    started_at: null,
    cancelled_at: null,
    failed_at: null,
    completed_at: null,
    incomplete_details: null,
    usage: null,
    ...rest,
    tools_json: toJson(tools),
    metadata_json: toJson(metadata),
    tool_choice_json: toJson(tool_choice),
    response_format_json: toJson(response_format),
  };
}

// OpenAI's answer, word for word: a 400 (which the SDKs do not retry; they would retry a 409 and start a second run).
const activeRunConflict = (threadId: string, runId: string) => invalidState(`Thread ${threadId} already has an active run ${runId}.`, 'thread_run_active');
const threadNotFound = (threadId: string) => notFound(`No thread found with id '${threadId}'.`, 'thread_id');

/**
 * Create a `queued` run on an existing thread and claim the thread, atomically with the
 * run's `additional_messages`. 404 without the thread; 400 when another run is active
 * (a claim held past the active run's `expires_at` is reclaimed first).
 */
export async function createRun(
  workspaceId: string,
  threadId: string,
  spec: RunSpec,
  additionalMessages: NewMessage[] = [],
  executor: RunExecutor = { inline: false },
): Promise<RunRecord> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const createdAt = nowSeconds();
    const item = runItem(workspaceId, threadId, spec, createdAt, executor);
    const messages = additionalMessages.map((m) => asItem(messageItem(workspaceId, threadId, m, createdAt)));
    const outcome = await transact([
      txUpdate('threads', threadKey(workspaceId, threadId), {
        set: { active_run_id: item.id, [CLAIM_EXPIRES]: item.expires_at },
        condition: 'attribute_exists(pk) AND attribute_not_exists(#active_run_id)',
      }),
      txPut('threads', asItem(item)),
      ...messages.map((m) => txPut('threads', m)),
    ]);
    if (outcome === 'ok') return fromItem(item);
    const thread = await getThreadItem(workspaceId, threadId);
    if (!thread) throw threadNotFound(threadId);
    if (thread.active_run_id && !(await releaseStaleClaim(workspaceId, threadId, thread.active_run_id))) {
      throw activeRunConflict(threadId, thread.active_run_id);
    }
  }
  const thread = await getThreadItem(workspaceId, threadId);
  throw activeRunConflict(threadId, thread?.active_run_id ?? 'unknown');
}

/** Create a thread with its messages and a `queued` run that already holds the claim. */
export async function createThreadAndRun(
  workspaceId: string,
  fields: ThreadFields,
  messages: NewMessage[],
  spec: RunSpec,
  executor: RunExecutor = { inline: false },
): Promise<{ thread: Thread; record: RunRecord }> {
  const createdAt = nowSeconds();
  const tItem = threadItem(workspaceId, fields, createdAt);
  const rItem = runItem(workspaceId, tItem.id, spec, createdAt, executor);
  await writeInitialMessages(workspaceId, tItem.id, messages, createdAt);
  const outcome = await transact([txPut('threads', { ...tItem, active_run_id: rItem.id, [CLAIM_EXPIRES]: rItem.expires_at }), txPut('threads', asItem(rItem))]);
  if (outcome !== 'ok') throw new Error(`thread-and-run write failed: ${outcome}`);
  return { thread: threadFromItem(tItem), record: fromItem(rItem) };
}

/** A raw run item -> its record (the engine reads its internal attributes off the same item). */
export const runRecordFromItem = (item: Record<string, unknown>): RunRecord => fromItem(item as unknown as RunItem);

export async function getRun(ref: RunRef): Promise<RunRecord | undefined> {
  const item = await getItem<RunItem>('threads', runKey(ref.workspaceId, ref.threadId, ref.runId), true);
  return item ? fromItem(item) : undefined;
}

export async function listRuns(workspaceId: string, threadId: string, page: PageRequest): Promise<Page<RunRecord>> {
  const result = await listPage<RunItem>({ table: 'threads', partition: threadPk(workspaceId, threadId), prefix: RUN_PREFIX }, page);
  return { items: result.items.map(fromItem), hasMore: result.hasMore };
}

/** Replace a run's metadata (allowed in every state). Undefined when there is no such run. */
export async function updateRunMetadata(ref: RunRef, metadata: Metadata): Promise<RunRecord | undefined> {
  const item = await updateItem<RunItem>('threads', runKey(ref.workspaceId, ref.threadId, ref.runId), {
    set: { metadata_json: toJson(metadata) },
    condition: 'attribute_exists(pk)',
  });
  return item ? fromItem(item) : undefined;
}

/**
 * Extra terms of a transition, for the run engine (engine/state.ts): a further condition
 * on the run item (`#attr` names, `:value` placeholders not starting with `:from`) and
 * internal attributes written in the same conditional update. They never appear in `Run`.
 */
export interface TransitionGuard {
  condition: string;
  values?: Record<string, unknown>;
  set?: Record<string, unknown>;
}

/** What a transition writes: the patch plus the fields the new status implies. */
function transitionSet(patch: RunPatch): Record<string, unknown> {
  const now = nowSeconds();
  const implied: Record<string, unknown> = {};
  if (patch.status !== 'requires_action') implied.required_action = null;
  if (isTerminal(patch.status)) implied.expires_at = null;
  if (patch.status === 'cancelled') implied.cancelled_at = now;
  if (patch.status === 'failed') implied.failed_at = now;
  if (patch.status === 'completed') implied.completed_at = now;
  const given = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
  return { ...implied, ...given };
}

/**
 * Move a run from one of `from` to `patch.status`, as one conditional write. Returns the
 * updated record, or undefined when the run does not exist or is not in one of `from`
 * (a late or duplicate delivery: nothing changes). Terminal states are never left: they
 * are ignored in `from`. Entering a terminal state releases the thread claim.
 *
 * Implied fields unless the patch sets them: `required_action` null outside
 * requires_action; `cancelled_at` / `failed_at` / `completed_at` = now on cancelled /
 * failed / completed; `expires_at` null once terminal. `started_at` and `usage` are the
 * caller's to set. An optional `guard` adds a condition and internal attributes.
 */
export async function transitionRun(ref: RunRef, from: readonly RunStatus[], patch: RunPatch, guard?: TransitionGuard): Promise<RunRecord | undefined> {
  const allowed = [...new Set(from)].filter((s) => !isTerminal(s));
  if (!allowed.length) return undefined;
  const conditionValues = Object.fromEntries(allowed.map((s, i) => [`:from${i}`, s]));
  const spec = {
    set: { ...guard?.set, ...transitionSet(patch) },
    ...(isTerminal(patch.status) ? { remove: ACTIVE_INDEX_KEYS } : {}),
    condition: `attribute_exists(pk) AND #status IN (${Object.keys(conditionValues).join(', ')})${guard ? ` AND (${guard.condition})` : ''}`,
    conditionValues: { ...guard?.values, ...conditionValues },
  };
  const key = runKey(ref.workspaceId, ref.threadId, ref.runId);
  if (isTerminal(patch.status)) {
    const outcome = await transact([
      txUpdate('threads', key, spec),
      txUpdate('threads', threadKey(ref.workspaceId, ref.threadId), {
        remove: CLAIM_ATTRIBUTES,
        condition: '#active_run_id = :claim',
        conditionValues: { ':claim': ref.runId },
      }),
    ]);
    if (outcome === 'ok') return getRun(ref);
    // The run's condition failed, or the thread no longer holds this claim (deleted,
    // or released already): apply the run's own transition alone.
  }
  const item = await updateItem<RunItem>('threads', key, spec);
  if (item && isTerminal(item.status)) await releaseClaim(ref);
  return item ? fromItem(item) : undefined;
}

/** Drop the thread's claim if (and only if) it is this run's. */
async function releaseClaim(ref: RunRef): Promise<boolean> {
  const released = await updateItem('threads', threadKey(ref.workspaceId, ref.threadId), {
    remove: CLAIM_ATTRIBUTES,
    condition: 'attribute_exists(pk) AND #active_run_id = :claim',
    conditionValues: { ':claim': ref.runId },
  });
  return released !== undefined;
}

/**
 * Drop a claim whose run cannot be read, only once the claim itself has expired. A run
 * that cannot be read yet is not proof of a lost run: the claim and the run are written in
 * one transaction, and a reader that raced that transaction (or an emulator with weaker
 * isolation) may see the claim before the run. Claims written before the claim carried
 * its expiry count as expired.
 */
async function releaseExpiredClaim(ref: RunRef): Promise<boolean> {
  const released = await updateItem('threads', threadKey(ref.workspaceId, ref.threadId), {
    remove: CLAIM_ATTRIBUTES,
    condition: `attribute_exists(pk) AND #active_run_id = :claim AND (attribute_not_exists(#${CLAIM_EXPIRES}) OR #${CLAIM_EXPIRES} < :now)`,
    conditionValues: { ':claim': ref.runId, ':now': nowSeconds() },
  });
  return released !== undefined;
}

/**
 * A claim whose run is gone, terminal, or past its `expires_at` (a lost worker) must not
 * block the thread forever: finish such a run (`expired`, or `cancelled` if it was being
 * cancelled) and release the claim. True when the claim was released.
 */
export async function releaseStaleClaim(workspaceId: string, threadId: string, runId: string): Promise<boolean> {
  const ref = { workspaceId, threadId, runId };
  const record = await getRun(ref);
  if (!record) return releaseExpiredClaim(ref);
  if (isTerminal(record.run.status)) return releaseClaim(ref);
  const { expires_at: expiresAt, status } = record.run;
  if (expiresAt === null || expiresAt > nowSeconds()) return false;
  const done = await transitionRun(ref, ACTIVE_RUN_STATUSES, { status: status === 'cancelling' ? 'cancelled' : 'expired' });
  if (done) return true;
  const thread = await getThreadItem(workspaceId, threadId);
  return thread?.active_run_id !== runId;
}

/**
 * One page of the active-runs index, oldest first, after the run id `after` (the cursor of
 * the next page). The index is eventually consistent: read each run again before acting.
 */
export async function listActiveRuns(shard: number, after?: string): Promise<{ refs: RunRef[]; next?: string }> {
  const page = await listPage<RunItem>(
    { table: 'threads', partition: `${ACTIVE_RUN_PREFIX}${shard}`, prefix: '', index: 'gsi1' },
    { limit: 100, order: 'asc', ...(after ? { after } : {}) },
  );
  const refs = page.items.map((i) => ({ workspaceId: i.workspace_id, threadId: i.thread_id, runId: i.id }));
  return page.hasMore && refs.length ? { refs, next: refs[refs.length - 1]!.runId } : { refs };
}
