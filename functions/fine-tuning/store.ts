/**
 * The jobs table: fine-tuning jobs and their events, keyed by workspace so
 * every read is tenant-scoped by construction.
 *
 *   job    pk WS#<workspace>                 sk FTJOB#<ftjob-id>     (ids are time-ordered)
 *   event  pk WS#<workspace>#FTJOB#<job-id>  sk EVENT#<ftevent-id>   (ids are time-ordered)
 *   marker pk WS#<workspace>#FTJOB#<job-id>  sk PEVENT#<digest>      (a provider event recorded)
 *
 * Every job write is conditional on the job's current status (`from`): a terminal job never
 * changes again and a duplicate or late worker delivery changes nothing.
 */
import { createHash } from 'node:crypto';
import { listPage, type Page } from '../shared/db/list';
import { tableName } from '../shared/db/client';
import { getItem, putNew, transactWrite, updateItem } from '../shared/db/ops';
import { ID_PREFIX, timeOrderedId } from '../shared/ids';
import type { FineTuningJobEvent, JobRecord, JobStatus } from './types';

const JOB_PREFIX = 'FTJOB#';
const EVENT_PREFIX = 'EVENT#';

const jobKey = (workspaceId: string, jobId: string) => ({ pk: `WS#${workspaceId}`, sk: `${JOB_PREFIX}${jobId}` });
const eventsPartition = (workspaceId: string, jobId: string) => `WS#${workspaceId}#FTJOB#${jobId}`;

type Stored<T> = T & { pk: string; sk: string };

function strip<T extends object>(item: Stored<T>): T {
  const { pk: _pk, sk: _sk, ...rest } = item;
  return rest as unknown as T;
}

export const newJobId = () => ID_PREFIX.fineTuningJob + timeOrderedId();

export async function createJob(record: JobRecord): Promise<boolean> {
  return putNew('jobs', { ...jobKey(record.workspace_id, record.id), ...record } as Stored<JobRecord> & Record<string, unknown>);
}

export async function getJob(workspaceId: string, jobId: string, consistent = true): Promise<JobRecord | undefined> {
  const item = await getItem<Stored<JobRecord>>('jobs', jobKey(workspaceId, jobId), consistent);
  return item ? strip(item) : undefined;
}

export async function listJobs(workspaceId: string, page: { limit: number; after?: string }, metadata: Record<string, string> = {}): Promise<Page<JobRecord>> {
  const entries = Object.entries(metadata);
  const filter = entries.length
    ? {
        expression: entries.map((_, i) => `#metadata.#mk${i} = :mv${i}`).join(' AND '),
        names: { '#metadata': 'metadata', ...Object.fromEntries(entries.map(([k], i) => [`#mk${i}`, k])) },
        values: Object.fromEntries(entries.map(([, v], i) => [`:mv${i}`, v])),
      }
    : undefined;
  const result = await listPage<Stored<JobRecord>>(
    { table: 'jobs', partition: `WS#${workspaceId}`, prefix: JOB_PREFIX, filter },
    { limit: page.limit, order: 'desc', after: page.after },
  );
  return { items: result.items.map(strip), hasMore: result.hasMore };
}

export interface JobUpdate {
  /** The statuses the job must be in for the write to apply. */
  from: readonly JobStatus[];
  set?: Partial<JobRecord>;
  remove?: Array<keyof JobRecord>;
  /** An extra condition over attributes (`#name`) and values (`:name`). */
  condition?: string;
  conditionValues?: Record<string, unknown>;
}

/** Conditional update; the new record, or undefined when the job was not in `from` (or gone). */
export async function updateJob(workspaceId: string, jobId: string, u: JobUpdate): Promise<JobRecord | undefined> {
  const values: Record<string, unknown> = {};
  u.from.forEach((s, i) => (values[`:from${i}`] = s));
  const statusCondition = `#status IN (${u.from.map((_, i) => `:from${i}`).join(', ')})`;
  const updated = await updateItem<Stored<JobRecord>>('jobs', jobKey(workspaceId, jobId), {
    set: { ...u.set, updated_at: Math.floor(Date.now() / 1000) },
    remove: u.remove as string[] | undefined,
    condition: u.condition ? `${statusCondition} AND ${u.condition}` : statusCondition,
    conditionValues: { ...values, ...u.conditionValues },
  });
  return updated ? strip(updated) : undefined;
}

// ---- events --------------------------------------------------------------------------------

/** Marker of a provider event already recorded (same partition as the events, not listed). */
const providerEventMarker = (jobId: string, providerEventId: string) =>
  `PEVENT#${createHash('sha256').update(`${jobId}\u0000${providerEventId}`).digest('hex').slice(0, 32)}`;

export type NewEvent = Omit<FineTuningJobEvent, 'object' | 'id' | 'created_at'> & { created_at?: number };

function eventItem(workspaceId: string, jobId: string, event: NewEvent) {
  const id = ID_PREFIX.fineTuningEvent + timeOrderedId();
  const item: FineTuningJobEvent = {
    object: 'fine_tuning.job.event',
    id,
    created_at: event.created_at ?? Math.floor(Date.now() / 1000),
    level: event.level,
    message: event.message,
    type: event.type,
    data: event.data,
  };
  return { pk: eventsPartition(workspaceId, jobId), sk: `${EVENT_PREFIX}${id}`, ...item };
}

/** Record one of the gateway's own events (ids are time-ordered: list order is record order). */
export async function addEvent(workspaceId: string, jobId: string, event: NewEvent): Promise<void> {
  await putNew('jobs', eventItem(workspaceId, jobId, event));
}

/**
 * Record a provider's event once: the event and a marker of its provider id are written
 * together, and the write is skipped when the marker exists (seen at an earlier poll).
 * The event keeps the provider's `created_at`; its id places it where it was first seen.
 */
export async function addProviderEvent(workspaceId: string, jobId: string, providerEventId: string, event: NewEvent): Promise<boolean> {
  return transactWrite([
    {
      Put: {
        TableName: tableName('jobs'),
        Item: { pk: eventsPartition(workspaceId, jobId), sk: providerEventMarker(jobId, providerEventId) },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
    { Put: { TableName: tableName('jobs'), Item: eventItem(workspaceId, jobId, event) } },
  ]);
}

/** Whether a provider's event was recorded (its marker exists): one read. */
export async function hasProviderEvent(workspaceId: string, jobId: string, providerEventId: string): Promise<boolean> {
  return (await getItem('jobs', { pk: eventsPartition(workspaceId, jobId), sk: providerEventMarker(jobId, providerEventId) })) !== undefined;
}

/** Newest first, OpenAI's order for job events; `after` is the last event id already seen. */
export async function listEvents(workspaceId: string, jobId: string, page: { limit: number; after?: string }): Promise<Page<FineTuningJobEvent>> {
  const result = await listPage<Stored<FineTuningJobEvent>>(
    { table: 'jobs', partition: eventsPartition(workspaceId, jobId), prefix: EVENT_PREFIX },
    { limit: page.limit, order: 'desc', after: page.after },
  );
  return { items: result.items.map(strip), hasMore: result.hasMore };
}
