/**
 * Where request-log records live (partition keys), for the writer (gateway/request-log.ts), the
 * logs API and the spend re-derivation: a module of its own so that readers do not bundle the writer.
 *
 * Write shards: one partition key takes at most 1,000 WCU, so a workspace's records, and each
 * index partition of them (a trace id, a metadata value such as `_environment: prod` that every
 * request carries), are spread over `REQUEST_LOG_SHARDS` partitions (`...#<shard>`), the shard a
 * hash of the record id: no I/O to choose it, and a record is found again from its id alone.
 * Records written before sharding stay in the unsharded (legacy) partitions, which every read
 * includes; earlier shard counts in the setting are read too (docs/architecture.md, data).
 */
import { config } from '../config';

/** FNV-1a (32 bits) of a record id: its shard under any count. */
export function shardHash(id: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** The shard a record id is written to under `count` shards. */
export const shardOf = (id: string, count: number): number => shardHash(id) % count;

/** The shard count records are written with now. */
const writeCount = () => config().requestLogShards[0]!;
/** Every shard number any configured count uses: 0 to the largest count - 1. */
const readShards = (): number[] => Array.from({ length: Math.max(...config().requestLogShards) }, (_, i) => i);

const legacyLogPartition = (workspaceId: string) => `WS#${workspaceId}#LOG`;
const legacyTracePartition = (workspaceId: string, traceId: string) => `WS#${workspaceId}#TRACE#${traceId}`;
const legacyMetadataPartition = (workspaceId: string, value: string) => `WS#${workspaceId}#${value}`;

/** A workspace's log partition for one shard. */
export const logShardPartition = (workspaceId: string, shard: number) => `${legacyLogPartition(workspaceId)}#${shard}`;

/** Where a new record is written: its workspace's log partition, shard by id. */
export const logPartition = (workspaceId: string, recordId: string) => logShardPartition(workspaceId, shardOf(recordId, writeCount()));
/** The trace index partition a new record is written to. */
export const tracePartition = (workspaceId: string, traceId: string, recordId: string) =>
  `${legacyTracePartition(workspaceId, traceId)}#${shardOf(recordId, writeCount())}`;
/** The partition of a metadata index (`meta_user`, ...) a new record with that value is written to. */
export const metadataPartition = (workspaceId: string, value: string, recordId: string) =>
  `${legacyMetadataPartition(workspaceId, value)}#${shardOf(recordId, writeCount())}`;

/**
 * Every partition that may hold a workspace's records (legacy first). The legacy key of an index
 * partition can equal a sharded one of another value (`WS#w#a#1` is value `a#1` unsharded and
 * value `a` in shard 1): readers of an index also filter on the value itself.
 */
export const logReadPartitions = (workspaceId: string): string[] => [
  legacyLogPartition(workspaceId),
  ...readShards().map((s) => logShardPartition(workspaceId, s)),
];
export const traceReadPartitions = (workspaceId: string, traceId: string): string[] => {
  const legacy = legacyTracePartition(workspaceId, traceId);
  return [legacy, ...readShards().map((s) => `${legacy}#${s}`)];
};
export const metadataReadPartitions = (workspaceId: string, value: string): string[] => {
  const legacy = legacyMetadataPartition(workspaceId, value);
  return [legacy, ...readShards().map((s) => `${legacy}#${s}`)];
};

/** The log partitions a record of this id can be in, the one it is written to now first. */
export function logPartitionsOfId(workspaceId: string, recordId: string): string[] {
  const shards = new Set(config().requestLogShards.map((count) => shardOf(recordId, count)));
  return [...[...shards].map((s) => logShardPartition(workspaceId, s)), legacyLogPartition(workspaceId)];
}
