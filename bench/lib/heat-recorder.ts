/**
 * Where DynamoDB writes land: a pass-through HTTP proxy in front of DynamoDB Local that
 * records, for every write the gateway makes, the table (or index) and partition key it
 * costs write units on, and how many. Nothing in functions/ knows: the gateway under test
 * is simply pointed at the proxy. Key attributes and indexes come from infra/tables.ts,
 * so whatever key layout the code writes (sharded or not) is what is measured.
 *
 * Per write (DynamoDB's rules, https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations.Writes):
 * - the base table: ceil(KB) of the larger of the item before and after, x2 in a transaction;
 *   a write refused by its condition still costs its units (no index write then);
 * - every GSI whose partition key attribute the item carries (all indexes project every
 *   attribute): ceil(KB) of the item, on that attribute's value; when an update or delete
 *   moves an item out of an index partition, a delete there as well.
 * Items an update or delete changes are read by the proxy (GetItem, strongly consistent,
 * unrecorded) before (tables with indexes) and after the write. Unprocessed items of a
 * BatchWriteItem are counted as written (DynamoDB Local does not return any).
 */
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { indexesOf, TABLE_SPECS } from '../../infra/tables';
import { itemBytes, writeUnits, type Item } from './dynamo-size';

/** One write's cost on one partition: `target` is the table, or `table/index`. */
export interface WriteRecord {
  target: string;
  partition: string;
  units: number;
  bytes: number;
}

export interface HeatRecorder {
  endpoint: string;
  /** Writes are recorded only while this is true. */
  recording: boolean;
  writes: WriteRecord[];
  /** Write calls by operation while recording. */
  calls: Record<string, number>;
  stop(): Promise<void>;
}

const WRITE_OPS = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);

interface Planned {
  table: string;
  kind: 'put' | 'update' | 'delete' | 'check';
  item?: Item;
  key?: Item;
  transactional: boolean;
  before?: Item;
  after?: Item;
}

type TxItem = {
  Put?: { TableName: string; Item: Item };
  Update?: { TableName: string; Key: Item };
  Delete?: { TableName: string; Key: Item };
  ConditionCheck?: { TableName: string; Key: Item };
};

/** The items one write call touches, from its request body. */
export function planWrites(op: string, body: Record<string, unknown>): Planned[] {
  const table = body.TableName as string;
  switch (op) {
    case 'PutItem':
      return [{ table, kind: 'put', item: body.Item as Item, transactional: false }];
    case 'UpdateItem':
      return [{ table, kind: 'update', key: body.Key as Item, transactional: false }];
    case 'DeleteItem':
      return [{ table, kind: 'delete', key: body.Key as Item, transactional: false }];
    case 'BatchWriteItem':
      return Object.entries(body.RequestItems as Record<string, Array<{ PutRequest?: { Item: Item }; DeleteRequest?: { Key: Item } }>>).flatMap(
        ([name, requests]) =>
          requests.map(
            (r): Planned =>
              r.PutRequest
                ? { table: name, kind: 'put', item: r.PutRequest.Item, transactional: false }
                : { table: name, kind: 'delete', key: r.DeleteRequest!.Key, transactional: false },
          ),
      );
    case 'TransactWriteItems':
      return (body.TransactItems as TxItem[]).map((t): Planned => {
        if (t.Put) return { table: t.Put.TableName, kind: 'put', item: t.Put.Item, transactional: true };
        if (t.Update) return { table: t.Update.TableName, kind: 'update', key: t.Update.Key, transactional: true };
        if (t.Delete) return { table: t.Delete.TableName, kind: 'delete', key: t.Delete.Key, transactional: true };
        return { table: t.ConditionCheck!.TableName, kind: 'check', key: t.ConditionCheck!.Key, transactional: true };
      });
    default:
      return [];
  }
}

interface TableKeys {
  name: string;
  partitionKey: string;
  indexes: Array<{ name: string; partitionKey: string }>;
}

/** The table spec of a physical table name (`<prefix><name>`). */
function tableKeysOf(physical: string, prefix: string): TableKeys | undefined {
  const spec = TABLE_SPECS.find((t) => `${prefix}${t.name}` === physical);
  return spec && { name: spec.name, partitionKey: spec.partitionKey, indexes: indexesOf(spec) };
}

const stringOf = (item: Item | undefined, attribute: string): string | undefined => item?.[attribute]?.S;

/**
 * The write units one planned write costs, by target and partition. `applied` is false
 * when the write was refused (condition failed, transaction cancelled): the base table is
 * still charged, no index is.
 */
export function chargeWrite(p: Planned, keys: TableKeys, applied: boolean): WriteRecord[] {
  const after = p.kind === 'put' ? p.item : p.kind === 'update' ? p.after : undefined;
  const before = p.before;
  const bytes = Math.max(after ? itemBytes(after) : 0, before ? itemBytes(before) : 0, p.key ? itemBytes(p.key) : 0);
  const partition = stringOf(after ?? before ?? p.key, keys.partitionKey) ?? '?';
  const out: WriteRecord[] = [{ target: keys.name, partition, units: writeUnits(bytes, p.transactional), bytes }];
  if (!applied || p.kind === 'check') return out;
  for (const index of keys.indexes) {
    const now = stringOf(after, index.partitionKey);
    const was = stringOf(before, index.partitionKey);
    const target = `${keys.name}/${index.name}`;
    if (now !== undefined) {
      const size = itemBytes(after!);
      out.push({ target, partition: now, units: writeUnits(size), bytes: size });
    }
    if (was !== undefined && was !== now) {
      const size = itemBytes(before!);
      out.push({ target, partition: was, units: writeUnits(size), bytes: size });
    }
  }
  return out;
}

export async function startHeatRecorder(target: string, tablePrefix: string): Promise<HeatRecorder> {
  const upstream = new URL(target);
  const reader = new DynamoDBClient({ endpoint: target, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  const read = async (table: string, key: Item | undefined): Promise<Item | undefined> => {
    if (!key) return undefined;
    const out = await reader.send(new GetItemCommand({ TableName: table, Key: key as never, ConsistentRead: true }));
    return out.Item as Item | undefined;
  };
  const forward = (headers: IncomingHttpHeaders, method: string, path: string, body: Buffer) =>
    new Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      const out = httpRequest({ hostname: upstream.hostname, port: upstream.port, path, method, headers: { ...headers, host: upstream.host } }, (up) => {
        const chunks: Buffer[] = [];
        up.on('data', (c: Buffer) => chunks.push(c));
        up.on('end', () => resolve({ status: up.statusCode ?? 500, headers: up.headers, body: Buffer.concat(chunks) }));
        up.on('error', reject);
      });
      out.on('error', reject);
      out.end(body);
    });

  const recorder: HeatRecorder = {
    endpoint: '',
    recording: false,
    writes: [],
    calls: {},
    stop: async () => {},
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      const op = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? '';
      try {
        const record = recorder.recording && WRITE_OPS.has(op);
        const planned = record ? planWrites(op, JSON.parse(body.toString('utf8')) as Record<string, unknown>) : [];
        const keysOf = new Map(planned.map((p) => [p.table, tableKeysOf(p.table, tablePrefix)]));
        for (const p of planned) {
          const hasIndexes = (keysOf.get(p.table)?.indexes.length ?? 0) > 0;
          if (p.kind === 'delete' || (p.kind === 'update' && hasIndexes)) p.before = await read(p.table, p.key);
        }
        const answer = await forward(req.headers, req.method ?? 'POST', req.url ?? '/', body);
        if (record) {
          const text = answer.body.toString('utf8');
          const refused = answer.status === 400 && /ConditionalCheckFailed|TransactionCanceled/.test(text);
          if (answer.status === 200 || refused) {
            recorder.calls[op] = (recorder.calls[op] ?? 0) + 1;
            for (const p of planned) {
              const keys = keysOf.get(p.table);
              if (!keys) continue;
              if (p.kind === 'update' && !refused) p.after = await read(p.table, p.key);
              recorder.writes.push(...chargeWrite(p, keys, !refused));
            }
          }
        }
        res.writeHead(answer.status, { ...answer.headers, 'content-length': String(answer.body.length) });
        res.end(answer.body);
      } catch (err) {
        res.writeHead(502);
        res.end(String(err));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  recorder.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  recorder.stop = () =>
    new Promise<void>((r) => {
      reader.destroy();
      server.closeAllConnections();
      server.close(() => r());
    });
  return recorder;
}
