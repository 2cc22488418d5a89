import type { GatewayError } from '../errors';
import type { HttpResponse } from './types';

const JSON_HEADERS = { 'content-type': 'application/json' } as const;

export const json = (statusCode: number, body: unknown, headers: Record<string, string> = {}): HttpResponse => ({
  statusCode,
  headers: { ...JSON_HEADERS, ...headers },
  body: JSON.stringify(body),
});

export const ok = (body: unknown, headers?: Record<string, string>) => json(200, body, headers);

export const errorResponse = (err: GatewayError): HttpResponse => ({
  statusCode: err.status,
  headers: { ...JSON_HEADERS, ...err.headers },
  body: JSON.stringify(err.toBody()),
});
