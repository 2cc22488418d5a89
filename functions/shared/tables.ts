/**
 * The bounded contexts that own a DynamoDB table each. Functions learn the
 * physical names from `TABLE_<NAME>` environment variables; infra/tables.ts gives each
 * table its keys, indexes and TTL and is the one source for CDK and the local runtime.
 */
export const TABLE_NAMES = ['control', 'prompts', 'threads', 'jobs', 'guardrails', 'policies', 'usage', 'cache', 'logs', 'idempotency', 'sessions'] as const;

export type TableName = (typeof TABLE_NAMES)[number];

export const tableEnvVar = (table: TableName) => `TABLE_${table.toUpperCase()}`;

/** Attribute names shared by every table. */
export const KEY = { pk: 'pk', sk: 'sk', gsi1pk: 'gsi1pk', gsi1sk: 'gsi1sk', ttl: 'ttl' } as const;
export const GSI1 = 'gsi1';

/** A global secondary index beside gsi1, keyed by its own attributes. */
export interface IndexKeys {
  name: string;
  partitionKey: string;
  sortKey: string;
}

/**
 * The request log's metadata indexes, one per well-known metadata key: partition
 * `WS#<workspaceId>#<value>`, sorted by the log id (`sk`, time-ordered) like the workspace's
 * own list. A record carries the attribute only when its metadata has the key (sparse).
 */
export const LOG_METADATA_INDEXES = {
  _user: { name: 'meta_user', partitionKey: 'meta_user', sortKey: KEY.sk },
  _prompt: { name: 'meta_prompt', partitionKey: 'meta_prompt', sortKey: KEY.sk },
  _organisation: { name: 'meta_organisation', partitionKey: 'meta_organisation', sortKey: KEY.sk },
  _environment: { name: 'meta_environment', partitionKey: 'meta_environment', sortKey: KEY.sk },
} as const satisfies Record<string, IndexKeys>;

export type IndexedMetadataKey = keyof typeof LOG_METADATA_INDEXES;
export const INDEXED_METADATA_KEYS = Object.keys(LOG_METADATA_INDEXES) as IndexedMetadataKey[];
