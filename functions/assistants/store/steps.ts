import { getItem, putNew, updateItem } from '../../shared/db/ops';
import { listPage, type Page, type PageRequest } from '../../shared/db/list';
import { ID_PREFIX, newId } from '../../shared/ids';
import { asItem, fromJson, stepKey, stepPrefix, threadPk, toJson } from './db';
import type { RunRef } from './runs';
import { nowSeconds, type Metadata, type RunStep, type StepDetails, type StepStatus, type Usage } from '../types';

/**
 * Run steps (`thread.run.step`), in the thread's partition under `STEP#<run_id>#<step_id>`.
 * The API reads them; the run lifecycle writes them (createStep / transitionStep).
 */

export const STEP_TERMINAL: readonly StepStatus[] = ['cancelled', 'failed', 'completed', 'expired'];

type StepItem = Omit<RunStep, 'object' | 'step_details' | 'metadata'> & {
  pk: string;
  sk: string;
  step_details_json: string;
  metadata_json: string;
};

function fromItem(item: StepItem): RunStep {
  return {
    id: item.id,
    object: 'thread.run.step',
    created_at: item.created_at,
    run_id: item.run_id,
    assistant_id: item.assistant_id,
    thread_id: item.thread_id,
    type: item.type,
    status: item.status,
    cancelled_at: item.cancelled_at ?? null,
    completed_at: item.completed_at ?? null,
    expired_at: item.expired_at ?? null,
    failed_at: item.failed_at ?? null,
    last_error: item.last_error ?? null,
    step_details: fromJson<StepDetails>(item.step_details_json, { type: 'message_creation', message_creation: { message_id: '' } }),
    usage: item.usage ?? null,
    metadata: fromJson<Metadata>(item.metadata_json, {}),
  };
}

/** Write a new step (`in_progress` unless told otherwise) of a run. */
export async function createStep(ref: RunRef, input: NewStep): Promise<RunStep> {
  return (await createStepOnce(ref, input)).step;
}

export interface NewStep {
  assistantId: string;
  details: StepDetails;
  status?: StepStatus;
  /** A fixed id (the run engine's deterministic ids); default a new time-ordered id. */
  id?: string;
}

/**
 * Write a step unless one with its id exists (a retried engine task): `created` says
 * which, and `step` is the stored one either way.
 */
export async function createStepOnce(ref: RunRef, input: NewStep): Promise<{ step: RunStep; created: boolean }> {
  const id = input.id ?? newId(ID_PREFIX.step);
  const item: StepItem = {
    ...stepKey(ref.workspaceId, ref.threadId, ref.runId, id),
    id,
    created_at: nowSeconds(),
    run_id: ref.runId,
    assistant_id: input.assistantId,
    thread_id: ref.threadId,
    type: input.details.type,
    status: input.status ?? 'in_progress',
    cancelled_at: null,
    completed_at: null,
    expired_at: null,
    failed_at: null,
    last_error: null,
    step_details_json: toJson(input.details),
    usage: null,
    metadata_json: toJson({}),
  };
  if (await putNew('threads', asItem(item))) return { step: fromItem(item), created: true };
  const existing = await getStep(ref, id);
  if (!existing) throw new Error(`step ${id} exists and cannot be read`);
  return { step: existing, created: false };
}

export async function getStep(ref: RunRef, stepId: string): Promise<RunStep | undefined> {
  const item = await getItem<StepItem>('threads', stepKey(ref.workspaceId, ref.threadId, ref.runId, stepId), true);
  return item ? fromItem(item) : undefined;
}

export async function listSteps(ref: RunRef, page: PageRequest): Promise<Page<RunStep>> {
  const result = await listPage<StepItem>({ table: 'threads', partition: threadPk(ref.workspaceId, ref.threadId), prefix: stepPrefix(ref.runId) }, page);
  return { items: result.items.map(fromItem), hasMore: result.hasMore };
}

export interface StepPatch {
  status: StepStatus;
  step_details?: StepDetails;
  usage?: Usage | null;
  last_error?: { code: string; message: string } | null;
}

/**
 * Conditional step update (status must be `in_progress`): terminal steps never change.
 * Sets the matching `*_at` timestamp. Undefined when the step is missing or finished.
 */
export async function transitionStep(ref: RunRef, stepId: string, patch: StepPatch): Promise<RunStep | undefined> {
  const now = nowSeconds();
  const stamp: Partial<Record<StepStatus, string>> = { cancelled: 'cancelled_at', completed: 'completed_at', expired: 'expired_at', failed: 'failed_at' };
  const set: Record<string, unknown> = {
    status: patch.status,
    usage: patch.usage,
    last_error: patch.last_error,
    step_details_json: patch.step_details && toJson(patch.step_details),
  };
  const at = stamp[patch.status];
  if (at) set[at] = now;
  const item = await updateItem<StepItem>('threads', stepKey(ref.workspaceId, ref.threadId, ref.runId, stepId), {
    set,
    condition: 'attribute_exists(pk) AND #status = :open',
    conditionValues: { ':open': 'in_progress' },
  });
  return item ? fromItem(item) : undefined;
}
