/**
 * Where request-log records live (partition keys), for the writer (gateway/request-log.ts), the
 * logs API and the spend re-derivation: a module of its own so that readers do not bundle the writer.
 */
export const logPartition = (workspaceId: string) => `WS#${workspaceId}#LOG`;
export const tracePartition = (workspaceId: string, traceId: string) => `WS#${workspaceId}#TRACE#${traceId}`;
/** Partition of a metadata index (`meta_user`, ...): the workspace's records with that value. */
export const metadataPartition = (workspaceId: string, value: string) => `WS#${workspaceId}#${value}`;
