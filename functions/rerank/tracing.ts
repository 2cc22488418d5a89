/**
 * The tracing headers of docs/api.md as request-log fields. `x-gateway-trace-id` is the
 * record's `trace_id` already (the kernel echoes a well-formed one, else makes one) and
 * `x-gateway-metadata` its `metadata`; the span headers become `span_id`,
 * `parent_span_id` and `span_name`. A malformed span header is a 400 naming it.
 */
import { badRequest } from '../shared/errors';

const SPAN_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const MAX_SPAN_NAME = 256;
const CONTROL = /[\u0000-\u001f\u007f]/;

export interface SpanFields {
  span_id?: string;
  parent_span_id?: string;
  span_name?: string;
}

function spanId(headers: Record<string, string>, name: string): string | undefined {
  const value = headers[name]?.trim();
  if (!value) return undefined;
  if (!SPAN_ID.test(value)) throw badRequest(`${name} must be 1 to 128 characters of letters, digits and . _ : -.`, name, 'invalid_header');
  return value;
}

function spanName(headers: Record<string, string>): string | undefined {
  const value = headers['x-gateway-span-name']?.trim();
  if (!value) return undefined;
  if (value.length > MAX_SPAN_NAME || CONTROL.test(value)) {
    throw badRequest(`x-gateway-span-name must be at most ${MAX_SPAN_NAME} characters without control characters.`, 'x-gateway-span-name', 'invalid_header');
  }
  return value;
}

export function spanFields(headers: Record<string, string>): SpanFields {
  const out: SpanFields = {};
  const id = spanId(headers, 'x-gateway-span-id');
  const parent = spanId(headers, 'x-gateway-parent-span-id');
  const name = spanName(headers);
  if (id) out.span_id = id;
  if (parent) out.parent_span_id = parent;
  if (name) out.span_name = name;
  return out;
}
