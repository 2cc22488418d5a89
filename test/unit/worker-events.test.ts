import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { MalformedEventError } from '../../functions/shared/workflows/events';
import { createQueueConsumer } from '../../functions/shared/workflows/sqs';

// What the workers do with an event that is not the shape their state machine or producer
// sends (a typed, logged error instead of a crash on a missing property), and the queue
// consumer's partial-batch answers, record by record.

const record = (id: string, body: unknown, group?: string, fifo = group !== undefined): SQSRecord => ({
  messageId: id,
  receiptHandle: `rh-${id}`,
  body: typeof body === 'string' ? body : JSON.stringify(body),
  attributes: {
    ApproximateReceiveCount: '1',
    SentTimestamp: '0',
    SenderId: 'local',
    ApproximateFirstReceiveTimestamp: '0',
    ...(group ? { MessageGroupId: group, MessageDeduplicationId: id } : {}),
  },
  messageAttributes: {},
  md5OfBody: '',
  eventSource: 'aws:sqs',
  eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:q${fifo ? '.fifo' : ''}`,
  awsRegion: 'us-east-1',
});

describe('Step Functions task events', () => {
  it('run-step fails a malformed event with MalformedEventError naming each bad field', async () => {
    const { handler } = await import('../../functions/workers/run-step');
    const err = await handler({ action: 'dance', workspaceId: 'ws', runId: 7 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MalformedEventError);
    expect(err).toMatchObject({ name: 'MalformedEventError', source: 'run-step' });
    const issues = (err as MalformedEventError).issues.join('\n');
    expect(issues).toMatch(/^threadId: /m);
    expect(issues).toMatch(/^runId: /m);
    expect(issues).toMatch(/^action: /m);
    await expect(handler(undefined)).rejects.toMatchObject({ name: 'MalformedEventError' });
  });

  it('fine-tune-step fails a malformed event with MalformedEventError', async () => {
    const { handler } = await import('../../functions/workers/fine-tune-step');
    const err = (await handler({ action: 'poll', workspaceId: 'ws' }).catch((e: unknown) => e)) as MalformedEventError;
    expect(err).toBeInstanceOf(MalformedEventError);
    expect(err.issues).toEqual([expect.stringMatching(/^jobId: /)]);
  });

  it('the finalizers fail an event without a detail with MalformedEventError', async () => {
    for (const name of ['run-finalize', 'fine-tune-finalize'] as const) {
      const { handler } = (await import(`../../functions/workers/${name}.ts`)) as { handler: (e: unknown) => Promise<void> };
      await expect(handler({ 'detail-type': 'Step Functions Execution Status Change' })).rejects.toMatchObject({ name: 'MalformedEventError', source: name });
    }
  });
});

describe('queue consumer (Powertools batch)', () => {
  const consumerOf = (seen: string[], failing: Set<string>) =>
    createQueueConsumer(async (body) => {
      const { id } = body as { id?: unknown };
      if (typeof id !== 'string') throw new MalformedEventError('test', ['id: expected string']);
      seen.push(id);
      if (failing.has(id)) throw new Error(`failing ${id}`);
    });

  it("FIFO: fails the rest of a failed record's group and goes on with the other groups", async () => {
    const seen: string[] = [];
    const consume = consumerOf(seen, new Set(['a1']));
    const event: SQSEvent = {
      Records: [record('a1', { id: 'a1' }, 'a'), record('b1', { id: 'b1' }, 'b'), record('a2', { id: 'a2' }, 'a'), record('b2', { id: 'b2' }, 'b')],
    };
    expect(await consume(event)).toEqual({ batchItemFailures: [{ itemIdentifier: 'a1' }, { itemIdentifier: 'a2' }] });
    expect(seen).toEqual(['a1', 'b1', 'b2']);
  });

  it('standard: fails only the records that threw', async () => {
    const seen: string[] = [];
    const consume = consumerOf(seen, new Set(['x']));
    const event: SQSEvent = { Records: [record('x', { id: 'x' }), record('y', { id: 'y' })] };
    expect(await consume(event)).toEqual({ batchItemFailures: [{ itemIdentifier: 'x' }] });
    expect(seen).toEqual(['x', 'y']);
  });

  it('drops a body that is not JSON or that the handler finds malformed, and answers a batch that fails entirely', async () => {
    const seen: string[] = [];
    const consume = consumerOf(seen, new Set(['bad']));
    const dropped: SQSEvent = { Records: [record('n', 'not json', 'g'), record('m', { nope: 1 }, 'g'), record('ok', { id: 'ok' }, 'g')] };
    expect(await consume(dropped)).toEqual({ batchItemFailures: [] });
    expect(seen).toEqual(['ok']);
    expect(await consume({ Records: [record('bad', { id: 'bad' }, 'g')] })).toEqual({ batchItemFailures: [{ itemIdentifier: 'bad' }] });
  });
});
