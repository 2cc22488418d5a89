/**
 * The bounded contexts that own a DynamoDB table each (DESIGN.md §4). Functions learn the
 * physical names from `TABLE_<NAME>` environment variables; infra/tables.ts gives each
 * table its keys, indexes and TTL and is the one source for CDK and the local runtime.
 */
export const TABLE_NAMES = [
  'control',
  'prompts',
  'threads',
  'jobs',
  'guardrails',
  'policies',
  'usage',
  'cache',
  'logs',
] as const;

export type TableName = (typeof TABLE_NAMES)[number];

export const tableEnvVar = (table: TableName) => `TABLE_${table.toUpperCase()}`;

/** Attribute names shared by every table. */
export const KEY = { pk: 'pk', sk: 'sk', gsi1pk: 'gsi1pk', gsi1sk: 'gsi1sk', ttl: 'ttl' } as const;
export const GSI1 = 'gsi1';
