import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { config } from '../config';
import type { TableName } from '../tables';

/**
 * One client per container. The endpoint comes from the SDK's own settings
 * (AWS_ENDPOINT_URL_DYNAMODB locally), never from a code branch.
 */
const base = new DynamoDBClient({ region: config().region, maxAttempts: 3 });

// The SDK's logger middleware builds a redacted copy of every input and output (a walk of
// the whole item against the schema) for a logger that, with none configured, discards it.
// No logger is configured here, so it only costs CPU on every call (bench/README.md).
base.middlewareStack.remove('loggerMiddleware');

/** Storage round-trips by command name, for the benchmarks' warm-path count. */
export const storageCalls: Record<string, number> = {};
base.middlewareStack.add(
  (next, context) => async (args) => {
    const name = String(context.commandName ?? 'unknown');
    storageCalls[name] = (storageCalls[name] ?? 0) + 1;
    return next(args);
  },
  { step: 'initialize', name: 'countStorageCalls' },
);

export const ddb = DynamoDBDocumentClient.from(base, {
  marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: true },
});

export const tableName = (table: TableName): string => config().tables[table];
