import type { GatewayError } from '../errors';
import type { HttpResponse } from './types';

const JSON_HEADERS = { 'content-type': 'application/json' } as const;

/**
 * Header maps merged into a new one, later ones winning. Object.assign rather than a
 * spread literal: V8 (Node 20) spreads header maps into a literal many times slower than it
 * assigns them, and a response merges a few on every request (bench/README.md).
 */
export function mergeHeaders(...parts: Array<Readonly<Record<string, string>> | undefined>): Record<string, string> {
  return Object.assign({}, ...parts);
}

export const json = (statusCode: number, body: unknown, headers: Record<string, string> = {}): HttpResponse => ({
  statusCode,
  headers: mergeHeaders(JSON_HEADERS, headers),
  body: JSON.stringify(body),
});

export const ok = (body: unknown, headers?: Record<string, string>) => json(200, body, headers);

export const errorResponse = (err: GatewayError): HttpResponse => ({
  statusCode: err.status,
  headers: mergeHeaders(JSON_HEADERS, err.headers),
  body: JSON.stringify(err.toBody()),
});
