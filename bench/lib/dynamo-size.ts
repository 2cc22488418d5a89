/**
 * DynamoDB item size and write units, as DynamoDB counts them
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):
 * an item is the sum of its attribute names' and values' sizes; a write costs one write
 * unit per 1 KB of the item (rounded up, at least one), twice that in a transaction.
 */

/** An attribute value in DynamoDB's JSON wire format (`{"S": "…"}`, `{"N": "12"}`, …). */
export type AttributeValue = {
  S?: string;
  N?: string;
  B?: string | Uint8Array;
  BOOL?: boolean;
  NULL?: boolean;
  M?: Record<string, AttributeValue>;
  L?: AttributeValue[];
  SS?: string[];
  NS?: string[];
  BS?: Array<string | Uint8Array>;
};
export type Item = Record<string, AttributeValue>;

const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');
/** Binary values travel base64-encoded (bytes once an SDK decoded them); their size is the bytes. */
const binary = (b: string | Uint8Array) => (typeof b === 'string' ? Buffer.from(b, 'base64').length : b.length);

/**
 * A number's size: about one byte per two significant digits, plus one. Leading and
 * trailing zeros, the sign, the decimal point and an exponent are not significant digits.
 */
export function numberBytes(n: string): number {
  const mantissa = n
    .trim()
    .replace(/^[+-]/, '')
    .replace(/[eE].*$/, '')
    .replace('.', '');
  const significant = mantissa.replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(1, significant.length) / 2) + 1;
}

/** Size of one attribute value, in bytes. */
export function valueBytes(v: AttributeValue): number {
  if (v.S !== undefined) return utf8(v.S);
  if (v.N !== undefined) return numberBytes(v.N);
  if (v.B !== undefined) return binary(v.B);
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.SS) return v.SS.reduce((n, s) => n + utf8(s), 0);
  if (v.NS) return v.NS.reduce((n, s) => n + numberBytes(s), 0);
  if (v.BS) return v.BS.reduce((n, s) => n + binary(s), 0);
  // A list or a map: 3 bytes, plus one byte per element beside the element itself.
  if (v.L) return 3 + v.L.reduce((n, e) => n + valueBytes(e) + 1, 0);
  if (v.M) return 3 + Object.entries(v.M).reduce((n, [name, e]) => n + utf8(name) + valueBytes(e) + 1, 0);
  return 0;
}

/** Size of an item: every attribute's name and value. */
export function itemBytes(item: Item): number {
  let n = 0;
  for (const [name, value] of Object.entries(item)) n += utf8(name) + valueBytes(value);
  return n;
}

/** Write units of one write of an item of `bytes`: 1 per KB started, x2 in a transaction. */
export function writeUnits(bytes: number, transactional = false): number {
  return Math.max(1, Math.ceil(bytes / 1024)) * (transactional ? 2 : 1);
}
