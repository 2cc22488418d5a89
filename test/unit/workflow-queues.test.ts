import { ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalSqs, type LocalSqs } from '../../infra/local/sqs';
import type { QueueSpec, WorkerSpec } from '../../infra/workflows/registry';

// The queue half of the plumbing: fauxqs queues with DLQs and redrive, the poller that
// emulates the Lambda event source mapping, and the production producer and consumer
// helpers (functions/shared/workflows/sqs.ts) reaching it through AWS_ENDPOINT_URL_SQS.

const queues: QueueSpec[] = [
  {
    name: 'test-std',
    fifo: false,
    envVar: 'TEST_STD_QUEUE_URL',
    consumer: 'std-consumer',
    batchSize: 5,
    maxReceiveCount: 2,
    visibilityTimeoutSeconds: 30,
    producers: [],
  },
  {
    name: 'test-fifo',
    fifo: true,
    envVar: 'TEST_FIFO_QUEUE_URL',
    consumer: 'fifo-consumer',
    batchSize: 1,
    maxReceiveCount: 3,
    visibilityTimeoutSeconds: 30,
    producers: [],
  },
];
const workers: WorkerSpec[] = [
  { name: 'std-consumer', entry: 'unused', kind: 'queue-consumer', description: 'test', timeoutSeconds: 5 },
  { name: 'fifo-consumer', entry: 'unused', kind: 'queue-consumer', description: 'test', timeoutSeconds: 5 },
];

type Seen = { body: unknown; receiveCount: number; group?: string };
const seen: Record<string, Seen[]> = { std: [], fifo: [] };
const failOnce = new Set<string>();

let sqs: LocalSqs;
let shared: typeof import('../../functions/shared/workflows/sqs');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(check: () => boolean) {
  while (!check()) await sleep(20);
}

beforeAll(async () => {
  // The consumers are the production helper, loaded after the endpoint env is in place.
  let consumers: Record<string, (e: SQSEvent) => Promise<unknown>> = {};
  sqs = await startLocalSqs({
    queues,
    workers,
    retryDelayMs: 1000,
    report: () => undefined,
    deferConsumers: true,
    loadConsumer: async (spec) => consumers[spec.name] as never,
  });
  Object.assign(process.env, sqs.env);
  shared = await import('../../functions/shared/workflows/sqs');
  const record = (kind: string) => async (body: unknown, r: SQSRecord) => {
    seen[kind]!.push({ body, receiveCount: Number(r.attributes.ApproximateReceiveCount), group: r.attributes.MessageGroupId });
    const id = (body as { id: string }).id;
    if (id.startsWith('always-fail')) throw new Error('permanent failure');
    if (failOnce.has(id)) {
      failOnce.delete(id);
      throw new Error('transient failure');
    }
  };
  consumers = { 'std-consumer': shared.createQueueConsumer(record('std')), 'fifo-consumer': shared.createQueueConsumer(record('fifo')) };
  sqs.startConsumers();
});
afterAll(async () => {
  await sqs?.stop();
});

describe('local SQS and the event source mapping emulation', () => {
  it('creates each queue with a dead-letter queue and publishes their URLs as env vars', () => {
    expect(Object.keys(sqs.queues).sort()).toEqual(['test-fifo', 'test-std']);
    expect(sqs.env.TEST_STD_QUEUE_URL).toBe(sqs.queues['test-std']!.url);
    expect(sqs.queues['test-fifo']!.url).toMatch(/ai-gateway-local-test-fifo\.fifo$/);
    expect(sqs.queues['test-std']!.deadLetterUrl).toMatch(/ai-gateway-local-test-std-dlq$/);
    expect(sqs.env.AWS_ENDPOINT_URL_SQS).toBe(sqs.endpoint);
    expect(new URL(sqs.endpoint).hostname).toBe('127.0.0.1');
  });

  it('delivers messages as SQSEvent records and redelivers reported failures', async () => {
    failOnce.add('retry-me');
    await shared.sendMessage(sqs.queues['test-std']!.url, { id: 'plain' });
    await shared.sendMessage(sqs.queues['test-std']!.url, { id: 'retry-me' });
    await until(() => seen.std!.filter((s) => (s.body as { id: string }).id === 'retry-me').length === 2);
    const attempts = seen.std!.filter((s) => (s.body as { id: string }).id === 'retry-me');
    expect(attempts.map((a) => a.receiveCount)).toEqual([1, 2]);
    expect(seen.std!.filter((s) => (s.body as { id: string }).id === 'plain')).toHaveLength(1);
  });

  it('moves a message that keeps failing to the dead-letter queue after maxReceiveCount', async () => {
    await shared.sendMessage(sqs.queues['test-std']!.url, { id: 'always-fail-1' });
    const client = new SQSClient({ region: 'us-east-1', endpoint: sqs.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    try {
      let dead: string | undefined;
      while (!dead) {
        const out = await client.send(new ReceiveMessageCommand({ QueueUrl: sqs.queues['test-std']!.deadLetterUrl, WaitTimeSeconds: 1 }));
        dead = out.Messages?.[0]?.Body;
      }
      expect(JSON.parse(dead)).toEqual({ id: 'always-fail-1' });
      expect(seen.std!.filter((s) => (s.body as { id: string }).id === 'always-fail-1').map((s) => s.receiveCount)).toEqual([1, 2]);

      // A body that is not JSON can never succeed: the consumer drops it instead of retrying.
      await client.send(new SendMessageCommand({ QueueUrl: sqs.queues['test-std']!.url, MessageBody: 'not json' }));
      await shared.sendMessage(sqs.queues['test-std']!.url, { id: 'after-garbage' });
      await until(() => seen.std!.some((s) => (s.body as { id: string }).id === 'after-garbage'));
    } finally {
      client.destroy();
    }
  });

  it('keeps FIFO order within a message group across a failed delivery', async () => {
    failOnce.add('a1');
    const url = sqs.queues['test-fifo']!.url;
    await shared.sendMessage(url, { id: 'a1' }, { groupId: 'thread-a', deduplicationId: 'a1' });
    await shared.sendMessage(url, { id: 'a2' }, { groupId: 'thread-a', deduplicationId: 'a2' });
    await shared.sendMessage(url, { id: 'b1' }, { groupId: 'thread-b', deduplicationId: 'b1' });
    // A resend with the same deduplication id is dropped by the queue.
    await shared.sendMessage(url, { id: 'b1' }, { groupId: 'thread-b', deduplicationId: 'b1' });
    await until(() => seen.fifo!.filter((s) => s.group === 'thread-a').length === 3 && seen.fifo!.some((s) => s.group === 'thread-b'));
    expect(seen.fifo!.filter((s) => s.group === 'thread-a').map((s) => (s.body as { id: string }).id)).toEqual(['a1', 'a1', 'a2']);
    expect(seen.fifo!.filter((s) => s.group === 'thread-b')).toHaveLength(1);
  });
});
