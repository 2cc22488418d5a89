import type { APIGatewayProxyEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { toMessageBatch } from '../../functions/batches/message-batch';
import type { BatchRecord } from '../../functions/batches/types';
import { buildRequest } from '../../functions/shared/http/request';
import { newRequestContext } from '../../functions/shared/telemetry/context';

// A Message Batch's `results_url` is the gateway's own results route as the caller reached
// it: on API Gateway that is https, the API's host and the stage (`/prod`), which the event's
// `path` leaves out and its `requestContext.path` keeps. Anthropic's SDK GETs it as it is.

const event = (path: string, sentPath: string, headers: Record<string, string>) =>
  ({ httpMethod: 'GET', path, headers, requestContext: { path: sentPath } }) as unknown as APIGatewayProxyEvent;

const ended = {
  id: 'msgbatch_01jz0000000000000000000000',
  status: 'completed',
  created_at: 1_700_000_000,
  expires_at: 1_700_086_400,
  completed_at: 1_700_000_100,
  cancelled_at: null,
  expired_at: null,
  failed_at: null,
  cancelling_at: null,
  total: 3,
  completed: 2,
  failed: 1,
} as unknown as BatchRecord;

describe('results_url', () => {
  it('keeps the API Gateway stage, the host and the scheme the caller used', () => {
    const headers = { host: 'abc123.execute-api.eu-west-1.amazonaws.com', 'x-forwarded-proto': 'https' };
    const path = `/v1/messages/batches/${ended.id}`;
    const req = buildRequest(event(path, `/prod${path}`, headers), newRequestContext('t'), headers, 'GET', path);
    expect(req.basePath).toBe('/prod');
    expect(toMessageBatch(ended, req)).toMatchObject({
      processing_status: 'ended',
      ended_at: '2023-11-14T22:15:00.000Z',
      created_at: '2023-11-14T22:13:20.000Z',
      request_counts: { processing: 0, succeeded: 2, errored: 1, canceled: 0, expired: 0 },
      results_url: `https://abc123.execute-api.eu-west-1.amazonaws.com/prod/v1/messages/batches/${ended.id}/results`,
    });
  });

  it('is plain http on the local runtime, which has no stage and sends no X-Forwarded-Proto', () => {
    const headers = { host: '127.0.0.1:8787' };
    const path = `/v1/messages/batches/${ended.id}`;
    const req = buildRequest(event(path, path, headers), newRequestContext('t'), headers, 'GET', path);
    expect(req.basePath).toBe('');
    expect(toMessageBatch(ended, req).results_url).toBe(`http://127.0.0.1:8787/v1/messages/batches/${ended.id}/results`);
  });

  it('is null until the batch has ended', () => {
    const running = { ...ended, status: 'in_progress', completed_at: null } as BatchRecord;
    expect(toMessageBatch(running, { headers: { host: 'h' }, basePath: '' })).toMatchObject({
      processing_status: 'in_progress',
      results_url: null,
      ended_at: null,
      request_counts: { processing: 0, succeeded: 2, errored: 1 },
    });
  });
});
