import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';

/**
 * DynamoDB with native JavaScript values, in the shapes of the SDK's DocumentClient
 * (@aws-sdk/lib-dynamodb): items, keys and expression values are plain objects, marshalled
 * to AttributeValues on the way out and back on the way in by @aws-sdk/util-dynamodb with
 * the options the DocumentClient was given here (undefined values dropped, class instances
 * as maps; numbers come back as JS numbers). Only the operations the gateway uses.
 */

/**
 * An item, key or set of expression values as JavaScript values. `any` as in the SDK's
 * types: typed items are interfaces, which have no index signature to match `unknown`.
 */
// biome-ignore lint/suspicious/noExplicitAny: item attributes are whatever the caller stored
export type Attributes = Record<string, any>;

/** What reads return: the caller states the item type it expects. */
export type ReadAttributes = Record<string, unknown>;

interface Expressions {
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Attributes;
}

interface Conditional extends Expressions {
  ConditionExpression?: string;
}

export interface GetInput {
  TableName: string;
  Key: Attributes;
  ConsistentRead?: boolean;
  ProjectionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
}

export interface PutInput extends Conditional {
  TableName: string;
  Item: Attributes;
  ReturnValues?: 'NONE' | 'ALL_OLD';
}

export interface UpdateInput extends Conditional {
  TableName: string;
  Key: Attributes;
  UpdateExpression: string;
  ReturnValues?: 'NONE' | 'ALL_OLD' | 'UPDATED_OLD' | 'ALL_NEW' | 'UPDATED_NEW';
}

export interface DeleteInput extends Conditional {
  TableName: string;
  Key: Attributes;
  ReturnValues?: 'NONE' | 'ALL_OLD';
}

interface ReadMany extends Expressions {
  TableName: string;
  IndexName?: string;
  FilterExpression?: string;
  ProjectionExpression?: string;
  Limit?: number;
  ConsistentRead?: boolean;
  ExclusiveStartKey?: Attributes;
}

export interface QueryInput extends ReadMany {
  KeyConditionExpression: string;
  ScanIndexForward?: boolean;
}

export type ScanInput = ReadMany;

export interface ConditionCheckInput extends Expressions {
  TableName: string;
  Key: Attributes;
  ConditionExpression: string;
}

export type TransactWriteItem =
  | { Put: Omit<PutInput, 'ReturnValues'> }
  | { Update: Omit<UpdateInput, 'ReturnValues'> }
  | { Delete: Omit<DeleteInput, 'ReturnValues'> }
  | { ConditionCheck: ConditionCheckInput };

export interface TransactWriteInput {
  TransactItems: TransactWriteItem[];
  ClientRequestToken?: string;
}

export type WriteRequest = { PutRequest: { Item: Attributes } } | { DeleteRequest: { Key: Attributes } };

export interface BatchWriteInput {
  /** Table name -> its puts and deletes. */
  RequestItems: Record<string, WriteRequest[]>;
}

export interface GetOutput {
  Item?: ReadAttributes;
}

/** Put, Update, Delete: the item's attributes as ReturnValues asked. */
export interface WriteOutput {
  Attributes?: ReadAttributes;
}

export interface QueryOutput {
  Items?: ReadAttributes[];
  LastEvaluatedKey?: ReadAttributes;
  Count?: number;
  ScannedCount?: number;
}

export interface BatchWriteOutput {
  UnprocessedItems?: Record<string, WriteRequest[]>;
}

/** An AttributeValue as it travels in JSON: `{"S": "x"}`, `{"N": "1"}`, `{"B": "<base64>"}`, `{"M": {...}}`... */
export type WireValue = { [type: string]: unknown };
export type WireMap = Record<string, WireValue>;

/** Sends one DynamoDB operation (e.g. `GetItem`) and resolves with its parsed JSON answer. */
export type SendOperation = (operation: string, input: object) => Promise<Record<string, unknown>>;

const MARSHALL_OPTIONS = { removeUndefinedValues: true, convertClassInstanceToMap: true };

function toBase64(data: unknown): string {
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('base64');
  throw new Error('Unsupported binary value: pass a Buffer, a typed array, a DataView or an ArrayBuffer.');
}

function fromBase64(text: unknown): Uint8Array {
  const buf = Buffer.from(String(text), 'base64');
  // A plain Uint8Array, as the SDK returns binary attributes.
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

// marshall() leaves binaries as they were given and unmarshall() takes them as they come:
// the JSON protocol carries them as base64, so both directions convert B and BS here.
function encodeBinary(value: WireValue): void {
  if (value.B !== undefined) value.B = toBase64(value.B);
  else if (value.BS !== undefined) value.BS = (value.BS as unknown[]).map(toBase64);
  else if (value.M !== undefined) for (const v of Object.values(value.M as WireMap)) encodeBinary(v);
  else if (value.L !== undefined) for (const v of value.L as WireValue[]) encodeBinary(v);
}

function decodeBinary(value: WireValue): void {
  if (value.B !== undefined) value.B = fromBase64(value.B);
  else if (value.BS !== undefined) value.BS = (value.BS as unknown[]).map(fromBase64);
  else if (value.M !== undefined) for (const v of Object.values(value.M as WireMap)) decodeBinary(v);
  else if (value.L !== undefined) for (const v of value.L as WireValue[]) decodeBinary(v);
}

/**
 * The AttributeValue marshall() gives a JSON-shaped value (string, safe number, boolean,
 * null, array, plain object) under MARSHALL_OPTIONS; undefined for anything else (sets,
 * binaries, class instances, numbers it refuses), which marshall() then takes whole.
 * Request-log records and counters are all JSON-shaped: this is most of a busy process's
 * marshalling, at a fraction of marshall()'s cost (bench/README.md, session 28).
 */
function jsonValueToWire(value: unknown): WireValue | undefined {
  switch (typeof value) {
    case 'string':
      return { S: value };
    case 'number':
      return Number.isFinite(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER ? { N: value.toString() } : undefined;
    case 'boolean':
      return { BOOL: value };
    case 'object': {
      if (value === null) return { NULL: true };
      if (Array.isArray(value)) {
        const list: WireValue[] = [];
        for (const element of value) {
          if (element === undefined || typeof element === 'function') continue;
          const wire = jsonValueToWire(element);
          if (!wire) return undefined;
          list.push(wire);
        }
        return { L: list };
      }
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return undefined;
      const map = jsonMapToWire(value as Record<string, unknown>);
      return map && { M: map };
    }
    default:
      return undefined;
  }
}

function jsonMapToWire(object: Record<string, unknown>): WireMap | undefined {
  const map: WireMap = {};
  // for...in, as marshall() walks a map's enumerable properties.
  for (const key in object) {
    const value = object[key];
    if (value === undefined || typeof value === 'function') continue;
    const wire = jsonValueToWire(value);
    if (!wire) return undefined;
    map[key] = wire;
  }
  return map;
}

/** JavaScript values -> an AttributeValue map ready for JSON. */
export function toWire(attributes: Attributes): WireMap {
  const proto: unknown = Object.getPrototypeOf(attributes);
  const plain = proto === Object.prototype || proto === null ? jsonMapToWire(attributes) : undefined;
  if (plain) return plain;
  const map = marshall(attributes, MARSHALL_OPTIONS) as unknown as WireMap;
  for (const value of Object.values(map)) encodeBinary(value);
  return map;
}

/** An AttributeValue map parsed from JSON -> JavaScript values (consumes the map). */
export function fromWire(map: WireMap): ReadAttributes {
  for (const value of Object.values(map)) decodeBinary(value);
  return unmarshall(map as unknown as Parameters<typeof unmarshall>[0]);
}

const optionalToWire = (attributes: Attributes | undefined) => (attributes === undefined ? undefined : toWire(attributes));
const optionalFromWire = (map: unknown) => (map === undefined ? undefined : fromWire(map as WireMap));

/** Key, Item, ExpressionAttributeValues and ExclusiveStartKey of an input, marshalled. */
function inputToWire(input: { Key?: Attributes; Item?: Attributes; ExpressionAttributeValues?: Attributes; ExclusiveStartKey?: Attributes }): object {
  return {
    ...input,
    Key: optionalToWire(input.Key),
    Item: optionalToWire(input.Item),
    ExpressionAttributeValues: optionalToWire(input.ExpressionAttributeValues),
    ExclusiveStartKey: optionalToWire(input.ExclusiveStartKey),
  };
}

function requestToWire(request: WriteRequest): object {
  return 'PutRequest' in request ? { PutRequest: { Item: toWire(request.PutRequest.Item) } } : { DeleteRequest: { Key: toWire(request.DeleteRequest.Key) } };
}

function requestFromWire(request: { PutRequest?: { Item: WireMap }; DeleteRequest?: { Key: WireMap } }): WriteRequest {
  return request.PutRequest ? { PutRequest: { Item: fromWire(request.PutRequest.Item) } } : { DeleteRequest: { Key: fromWire(request.DeleteRequest!.Key) } };
}

const mapValues = <A, B>(record: Record<string, A>, fn: (value: A) => B): Record<string, B> =>
  Object.fromEntries(Object.entries(record).map(([key, value]) => [key, fn(value)]));

export class DocumentClient {
  constructor(private readonly sendOperation: SendOperation) {}

  async get(input: GetInput): Promise<GetOutput> {
    const out = await this.sendOperation('GetItem', inputToWire(input));
    return { ...out, Item: optionalFromWire(out.Item) };
  }

  async put(input: PutInput): Promise<WriteOutput> {
    return this.write('PutItem', input);
  }

  async update(input: UpdateInput): Promise<WriteOutput> {
    return this.write('UpdateItem', input);
  }

  async delete(input: DeleteInput): Promise<WriteOutput> {
    return this.write('DeleteItem', input);
  }

  async query(input: QueryInput): Promise<QueryOutput> {
    return this.readMany('Query', input);
  }

  async scan(input: ScanInput): Promise<QueryOutput> {
    return this.readMany('Scan', input);
  }

  async transactWrite(input: TransactWriteInput): Promise<Record<string, unknown>> {
    const TransactItems = input.TransactItems.map((item) => mapValues(item as Record<string, Attributes>, inputToWire));
    return this.sendOperation('TransactWriteItems', { ...input, TransactItems });
  }

  async batchWrite(input: BatchWriteInput): Promise<BatchWriteOutput> {
    const out = await this.sendOperation('BatchWriteItem', {
      ...input,
      RequestItems: mapValues(input.RequestItems, (requests) => requests.map(requestToWire)),
    });
    const unprocessed = out.UnprocessedItems as Record<string, Array<Parameters<typeof requestFromWire>[0]>> | undefined;
    return { ...out, UnprocessedItems: unprocessed && mapValues(unprocessed, (requests) => requests.map(requestFromWire)) };
  }

  private async write(operation: string, input: PutInput | UpdateInput | DeleteInput): Promise<WriteOutput> {
    const out = await this.sendOperation(operation, inputToWire(input));
    return { ...out, Attributes: optionalFromWire(out.Attributes) };
  }

  private async readMany(operation: string, input: ReadMany): Promise<QueryOutput> {
    const out = await this.sendOperation(operation, inputToWire(input));
    return { ...out, Items: (out.Items as WireMap[] | undefined)?.map(fromWire), LastEvaluatedKey: optionalFromWire(out.LastEvaluatedKey) };
  }
}
