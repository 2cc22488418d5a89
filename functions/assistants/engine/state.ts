import { createHash } from 'node:crypto';
import { config } from '../../shared/config';
import { getItem, updateItem } from '../../shared/db/ops';
import { runKey } from '../store/db';
import { runRecordFromItem, type RunRecord, type RunRef, type TransitionGuard } from '../store/runs';
import type { Usage } from '../types';

/**
 * What the run engine keeps about a run between model calls, as internal attributes of
 * the run item (never part of the `Run` object):
 *
 * - `engine_calls`          model calls committed so far (the next call's index)
 * - `engine_usage`          usage summed over the committed calls
 * - `engine_pending_usage`  usage of the call whose tool calls wait for outputs
 * - `engine_clock`, `engine_clock_call`  the time base of the ids of call `engine_clock_call`
 * - `engine_inline`         the run executes inline (streamed), not in the workflow
 * - `executor_lease_until`  inline runs: until when (ms) the request executing it holds it;
 *                           renewed every second while it calls the model (renewLease)
 *
 * Idempotency per (run, call index): a call's steps and message get deterministic ids
 * (callIds), so a retried or duplicated task writes the same items (conditional puts);
 * and a call is committed by a run transition guarded by `engine_calls = k`, so exactly
 * one execution of call k changes the run.
 */

export const ZERO_USAGE: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

export const addUsage = (a: Usage, b: Usage | null | undefined): Usage =>
  b
    ? {
        prompt_tokens: a.prompt_tokens + b.prompt_tokens,
        completion_tokens: a.completion_tokens + b.completion_tokens,
        total_tokens: a.total_tokens + b.total_tokens,
      }
    : a;

export interface EngineState {
  calls: number;
  usage: Usage;
  pendingUsage: Usage | null;
  clock: { call: number; ms: number } | null;
  inline: boolean;
  /** Inline runs: until when (ms) their executor holds them; null when never leased. */
  leaseUntil: number | null;
}

/** The lease an inline executor takes or renews now (RUN_EXECUTOR_LEASE_MS from now). */
export const executorLeaseUntil = () => Date.now() + config().runExecutorLeaseMs;

/**
 * An inline executor renews its hold on a run it is executing (in_progress or being
 * cancelled). Returns the run after the renewal, or undefined when the run is no longer
 * one to execute (ended, gone, or waiting for tool outputs).
 */
export async function renewLease(ref: RunRef): Promise<RunRecord | undefined> {
  const item = await updateItem<Record<string, unknown>>('threads', runKey(ref.workspaceId, ref.threadId, ref.runId), {
    set: { executor_lease_until: executorLeaseUntil() },
    condition: 'attribute_exists(pk) AND #status IN (:running, :cancelling)',
    conditionValues: { ':running': 'in_progress', ':cancelling': 'cancelling' },
  });
  return item ? runRecordFromItem(item) : undefined;
}

function stateOf(item: Record<string, unknown>): EngineState {
  const clockCall = item.engine_clock_call;
  const clockMs = item.engine_clock;
  return {
    calls: typeof item.engine_calls === 'number' ? item.engine_calls : 0,
    usage: (item.engine_usage as Usage | undefined) ?? ZERO_USAGE,
    pendingUsage: (item.engine_pending_usage as Usage | null | undefined) ?? null,
    clock: typeof clockCall === 'number' && typeof clockMs === 'number' ? { call: clockCall, ms: clockMs } : null,
    inline: item.engine_inline === true,
    leaseUntil: typeof item.executor_lease_until === 'number' ? item.executor_lease_until : null,
  };
}

/** The run (consistent read) and its engine state; undefined when the run is gone. */
export async function loadRunState(ref: RunRef): Promise<{ record: RunRecord; state: EngineState } | undefined> {
  const item = await getItem<Record<string, unknown>>('threads', runKey(ref.workspaceId, ref.threadId, ref.runId), true);
  return item ? { record: runRecordFromItem(item), state: stateOf(item) } : undefined;
}

/**
 * Guard of the transition that commits call `k`: it succeeds once (engine_calls = k),
 * records the new totals, and optionally marks the run inline.
 */
export function commitGuard(k: number, usage: Usage, pendingUsage: Usage | null, extra: Record<string, unknown> = {}): TransitionGuard {
  return {
    condition: k === 0 ? 'attribute_not_exists(#engine_calls) OR #engine_calls = :engine_k' : '#engine_calls = :engine_k',
    values: { ':engine_k': k },
    set: { engine_calls: k + 1, engine_usage: usage, engine_pending_usage: pendingUsage, ...extra },
  };
}

/** Guard that only checks the committed call count (the run has not moved on meanwhile). */
export function callsGuard(calls: number, set: Record<string, unknown> = {}): TransitionGuard {
  return {
    condition: calls === 0 ? 'attribute_not_exists(#engine_calls) OR #engine_calls = :engine_k' : '#engine_calls = :engine_k',
    values: { ':engine_k': calls },
    set,
  };
}

/**
 * The time base of call `k`'s ids, taken once: the first executor of the call sets it,
 * every other execution of the same call reads it. Undefined when a later call already
 * holds the clock (this execution is late and must not write).
 */
export async function claimCallClock(ref: RunRef, k: number): Promise<number | undefined> {
  const key = runKey(ref.workspaceId, ref.threadId, ref.runId);
  const now = Date.now();
  const claimed = await updateItem('threads', key, {
    set: { engine_clock: now, engine_clock_call: k },
    condition: 'attribute_exists(pk) AND (attribute_not_exists(#engine_clock_call) OR #engine_clock_call < :engine_k)',
    conditionValues: { ':engine_k': k },
  });
  if (claimed) return now;
  const item = await getItem<Record<string, unknown>>('threads', key, true);
  const clock = item ? stateOf(item).clock : null;
  return clock?.call === k ? clock.ms : undefined;
}

// ---- deterministic, time-ordered ids -----------------------------------------------------

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/** 10 characters of millisecond time, as in shared/ids (so these ids sort with the others). */
function encodeTime(ms: number): string {
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

function hashPart(seed: string): string {
  const digest = createHash('sha256').update(seed).digest();
  return Array.from(digest.subarray(0, 16), (b) => ALPHABET[b % 32]).join('');
}

export interface CallIds {
  /** The message_creation step (its time base first, so it lists before the tool step). */
  messageStep: string;
  message: string;
  toolStep: string;
}

/** Ids of call `k`'s items: same run, call and clock -> same ids, on any machine. */
export function callIds(runId: string, k: number, clockMs: number): CallIds {
  const part = (kind: string) => hashPart(`${runId}:${k}:${kind}`);
  return {
    messageStep: `step_${encodeTime(clockMs)}${part('message_step')}`,
    message: `msg_${encodeTime(clockMs + 1)}${part('message')}`,
    toolStep: `step_${encodeTime(clockMs + 2)}${part('tool_step')}`,
  };
}
