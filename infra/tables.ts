import { GSI1, KEY, LOG_METADATA_INDEXES, TABLE_NAMES, tableEnvVar, type IndexKeys, type TableName } from '../functions/shared/tables';

/**
 * The single source of table specs: the data stack creates these tables
 * in AWS and the local runtime creates them in DynamoDB Local. Every table has string
 * keys `pk`/`sk`; keys are prefixed by workspace so every query is tenant-scoped.
 */
export interface TableSpec {
  name: TableName;
  envVar: string;
  partitionKey: typeof KEY.pk;
  sortKey: typeof KEY.sk;
  /** One general-purpose GSI (`gsi1pk`/`gsi1sk`, all attributes projected). */
  gsi1: boolean;
  /** Further GSIs with their own key attributes (all attributes projected). */
  indexes: readonly IndexKeys[];
  /** Attribute holding an expiry in Unix seconds, if items expire. */
  ttlAttribute?: typeof KEY.ttl;
  purpose: string;
}

const PURPOSES: Record<TableName, { gsi1: boolean; ttl: boolean; purpose: string }> = {
  control: { gsi1: true, ttl: false, purpose: 'organisations, workspaces, API keys (hashed), managed providers (encrypted), configs, assistants' },
  prompts: { gsi1: true, ttl: false, purpose: 'prompt templates, immutable versions, the published pointer' },
  threads: { gsi1: true, ttl: false, purpose: 'threads, messages, runs and run steps' },
  jobs: { gsi1: true, ttl: true, purpose: 'fine-tuning jobs and events; file and upload metadata (bytes in the files bucket; expired ones leave by TTL)' },
  guardrails: { gsi1: true, ttl: false, purpose: 'guardrails and their versions' },
  policies: { gsi1: true, ttl: false, purpose: 'rate-limit policies' },
  usage: { gsi1: false, ttl: true, purpose: 'rate-limit counters per bucket and window; hourly spend counters per workspace and dimension' },
  cache: { gsi1: false, ttl: true, purpose: 'cached provider responses' },
  logs: { gsi1: true, ttl: true, purpose: 'request log records (index by trace id and by the well-known metadata keys)' },
  idempotency: { gsi1: false, ttl: true, purpose: 'Idempotency-Key claims and the first answer to each key (24 hours)' },
  sessions: { gsi1: false, ttl: true, purpose: 'MCP sessions (Mcp-Session-Id): the key that opened each, its protocol version, a sliding expiry' },
};

const INDEXES: Partial<Record<TableName, readonly IndexKeys[]>> = {
  logs: Object.values(LOG_METADATA_INDEXES),
};

export const TABLE_SPECS: readonly TableSpec[] = TABLE_NAMES.map((name) => ({
  name,
  envVar: tableEnvVar(name),
  partitionKey: KEY.pk,
  sortKey: KEY.sk,
  gsi1: PURPOSES[name].gsi1,
  indexes: INDEXES[name] ?? [],
  ...(PURPOSES[name].ttl ? { ttlAttribute: KEY.ttl } : {}),
  purpose: PURPOSES[name].purpose,
}));

/** Every GSI of a table (gsi1 first), with its key attributes. */
export function indexesOf(spec: TableSpec): IndexKeys[] {
  return [...(spec.gsi1 ? [{ name: GSI1, partitionKey: KEY.gsi1pk, sortKey: KEY.gsi1sk }] : []), ...spec.indexes];
}
