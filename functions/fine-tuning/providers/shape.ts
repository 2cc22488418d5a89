/** Small helpers shared by the fine-tuning adapters: requests and tolerant field readers. */
import { createHash, randomUUID } from 'node:crypto';
import { buildHeaders } from '../../providers/_shared/openai-shape';
import { escapesBase } from '../../shared/path-segment';
import type { UpstreamRequest } from '../../providers/types';
import type { Hyperparameters, JobError } from '../types';
import type { Endpoint, ProviderEvent } from './types';

export function get(url: string, e: Endpoint): UpstreamRequest {
  return { url, method: 'GET', headers: buildHeaders({ accept: 'application/json', ...e.auth }, e.target) };
}

export function post(url: string, body: unknown, e: Endpoint): UpstreamRequest {
  return {
    url,
    method: 'POST',
    headers: buildHeaders({ 'content-type': 'application/json', accept: 'application/json', ...e.auth }, e.target),
    body: body === undefined ? undefined : JSON.stringify(body),
  };
}

/** A `multipart/form-data` POST of text fields and one file part, built whole (a provider's Files API upload). */
export function postForm(url: string, fields: Record<string, string>, file: { field: string; filename: string; bytes: Buffer }, e: Endpoint): UpstreamRequest {
  const boundary = `----gateway-${randomUUID()}`;
  const quoted = (v: string) => v.replace(/["\r\n]/g, '_');
  const head = [
    ...Object.entries(fields).map(([name, value]) => `--${boundary}\r\ncontent-disposition: form-data; name="${quoted(name)}"\r\n\r\n${value}\r\n`),
    `--${boundary}\r\ncontent-disposition: form-data; name="${quoted(file.field)}"; filename="${quoted(file.filename)}"\r\ncontent-type: application/jsonl\r\n\r\n`,
  ].join('');
  return {
    url,
    method: 'POST',
    headers: buildHeaders({ 'content-type': `multipart/form-data; boundary=${boundary}`, accept: 'application/json', ...e.auth }, e.target),
    body: Buffer.concat([Buffer.from(head), file.bytes, Buffer.from(`\r\n--${boundary}--\r\n`)]),
  };
}

/**
 * A path segment from an id the caller chose (never lets it add segments or a query, nor
 * step up: encoding leaves `.` and `..` as they are, and URLs resolve them).
 */
export function seg(id: string): string {
  if (escapesBase(id)) throw new Error(`not an id that can be part of a URL path: '${id.slice(0, 80)}'`);
  return encodeURIComponent(id);
}

export const obj = (v: unknown): Record<string, unknown> => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
export const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
export const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
export const int = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? Math.round(v) : null);

/** Unix seconds from a number (seconds or ms) or an ISO date string. */
export function unixSeconds(v: unknown): number | null {
  if (typeof v === 'number' && Number.isFinite(v)) return Math.floor(v > 1e12 ? v / 1000 : v);
  if (typeof v === 'string' && v) {
    const ms = Date.parse(v);
    return Number.isNaN(ms) ? null : Math.floor(ms / 1000);
  }
  return null;
}

/** A stable id for provider events that carry none (same content -> same id). */
export const derivedEventId = (...parts: unknown[]) => createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 24);

export function level(v: unknown): ProviderEvent['level'] {
  const s = String(v ?? '').toLowerCase();
  return s === 'error' ? 'error' : s === 'warn' || s === 'warning' ? 'warn' : 'info';
}

/** `{n_epochs, batch_size, learning_rate_multiplier}` reported by an OpenAI-style provider. */
export function hyperparametersOf(v: unknown): Partial<Hyperparameters> | undefined {
  const h = obj(v);
  const out: Partial<Hyperparameters> = {};
  for (const k of ['n_epochs', 'batch_size', 'learning_rate_multiplier'] as const) {
    const value = h[k];
    if (value === 'auto' || (typeof value === 'number' && Number.isFinite(value))) out[k] = value;
  }
  return Object.keys(out).length ? out : undefined;
}

/** The provider's error, or a generic one that names the provider. */
export function failure(provider: string, e: unknown, fallbackMessage?: string): JobError {
  const o = obj(e);
  return {
    code: str(o.code) ?? (typeof o.code === 'number' ? String(o.code) : 'provider_job_failed'),
    message: str(o.message) ?? fallbackMessage ?? `${provider} reported that the job failed, without a reason.`,
    param: str(o.param) ?? '',
  };
}
