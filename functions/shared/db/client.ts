import { createAwsJsonClient, DYNAMODB } from '../aws/json-client';
import { config } from '../config';
import type { TableName } from '../tables';
import { DocumentClient } from './document';

/** One client (one keep-alive pool) per container; the endpoint comes from config (AWS_ENDPOINT_URL_DYNAMODB locally). */
const dynamodb = createAwsJsonClient(DYNAMODB);

/** Storage round-trips by command name (`GetItemCommand`, as the SDK named them), for the benchmarks' warm-path count. */
export const storageCalls: Record<string, number> = {};

export const ddb = new DocumentClient((operation, input) => {
  const name = `${operation}Command`;
  storageCalls[name] = (storageCalls[name] ?? 0) + 1;
  return dynamodb.send(operation, input);
});

export const tableName = (table: TableName): string => config().tables[table];
