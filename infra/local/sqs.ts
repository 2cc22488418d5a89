import { resolve } from 'node:path';
import {
  ChangeMessageVisibilityBatchCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
  type Message,
  type MessageAttributeValue,
} from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { buildApp, type BuildAppOptions } from 'fauxqs';
import { lambdaContext } from './lambda-context';
import { persistentS3Store } from './s3-store';
import { QueueJournal, type JournalMessage } from './sqs-journal';
import { deadLetterQueueName, QUEUES, queueName, WORKERS, type QueueSpec, type WorkerSpec } from '../workflows/registry';

/**
 * Local SQS): fauxqs in-process on a loopback port, the
 * queues of infra/workflows/registry.ts (each with its dead-letter queue and redrive policy,
 * FIFO where the spec says so), and one poller per queue that emulates the Lambda SQS event
 * source mapping with ReportBatchItemFailures: ReceiveMessage -> SQSEvent -> the consumer
 * worker's handler -> delete the successes; reported failures (or a thrown handler: the
 * whole batch) stay in the queue and come back, up to maxReceiveCount, then go to the DLQ.
 * Production code reaches it through AWS_ENDPOINT_URL_SQS and the queue-URL env vars.
 *
 * Local differences: a failed message becomes visible again after `retryDelayMs` (default
 * 2 s) instead of the queue's full visibility timeout, so retries are observable locally.
 * With a `journalFile`, the queues are durable (fauxqs itself keeps messages in memory
 * only): a message sent and not yet deleted when the process died is sent again at the
 * next start (sqs-journal.ts), before the pollers start.
 */

export type ConsumerHandler = (event: SQSEvent, context: unknown) => Promise<SQSBatchResponse | undefined>;

export interface LocalSqsOptions {
  queues?: readonly QueueSpec[];
  workers?: readonly WorkerSpec[];
  /** Loads a consumer's handler (default: import its entry module and take `handler`). */
  loadConsumer?: (spec: WorkerSpec) => Promise<ConsumerHandler>;
  /** Delay before a failed message is delivered again, in ms (default 2000). */
  retryDelayMs?: number;
  /** Do not start the pollers (queues only); `startConsumers()` starts them later. */
  deferConsumers?: boolean;
  stage?: string;
  region?: string;
  /** Journal that makes the queues survive a crash (sqs-journal.ts), or null (memory only). */
  journalFile?: string | null;
  /** Folder that keeps the S3 emulator's objects across restarts (./s3-store.ts), or null (memory only). */
  s3DataDir?: string | null;
  report?: (message: string, detail?: unknown) => void;
}

export interface LocalQueue {
  spec: QueueSpec;
  url: string;
  arn: string;
  deadLetterUrl: string;
}

export interface LocalSqs {
  endpoint: string;
  queues: Readonly<Record<string, LocalQueue>>;
  /** Env vars that point production code at the emulator (endpoint and queue URLs). */
  env: Readonly<Record<string, string>>;
  /** Start the pollers (when created with `deferConsumers`). Idempotent. */
  startConsumers(): void;
  stop(): Promise<void>;
}

const DEFAULT_REPORT = (message: string, detail?: unknown) =>
  process.stderr.write(`[local sqs] ${message}${detail === undefined ? '' : ` ${JSON.stringify(detail)}`}\n`);

const REPO_ROOT = resolve(import.meta.dirname, '../..');

async function importConsumer(spec: WorkerSpec): Promise<ConsumerHandler> {
  const mod = (await import(resolve(REPO_ROOT, spec.entry))) as { handler?: ConsumerHandler };
  if (typeof mod.handler !== 'function') throw new Error(`${spec.entry} exports no handler`);
  return mod.handler;
}

/** An SQSEvent record exactly as the Lambda event source mapping builds it. */
export function toSqsRecord(m: Message, queueArn: string, region: string): SQSRecord {
  const attrs = m.Attributes ?? {};
  const messageAttributes: SQSRecord['messageAttributes'] = {};
  for (const [name, v] of Object.entries(m.MessageAttributes ?? {})) {
    messageAttributes[name] = {
      stringValue: v.StringValue,
      binaryValue: v.BinaryValue ? Buffer.from(v.BinaryValue).toString('base64') : undefined,
      stringListValues: v.StringListValues ?? [],
      binaryListValues: (v.BinaryListValues ?? []).map((b) => Buffer.from(b).toString('base64')),
      dataType: v.DataType ?? 'String',
    };
  }
  return {
    messageId: m.MessageId!,
    receiptHandle: m.ReceiptHandle!,
    body: m.Body ?? '',
    attributes: {
      ApproximateReceiveCount: attrs.ApproximateReceiveCount ?? '1',
      SentTimestamp: attrs.SentTimestamp ?? String(Date.now()),
      SenderId: attrs.SenderId ?? '000000000000',
      ApproximateFirstReceiveTimestamp: attrs.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
      ...(attrs.SequenceNumber ? { SequenceNumber: attrs.SequenceNumber } : {}),
      ...(attrs.MessageGroupId ? { MessageGroupId: attrs.MessageGroupId } : {}),
      ...(attrs.MessageDeduplicationId ? { MessageDeduplicationId: attrs.MessageDeduplicationId } : {}),
    },
    messageAttributes,
    md5OfBody: m.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: region,
  };
}

export async function startLocalSqs(options: LocalSqsOptions = {}): Promise<LocalSqs> {
  const region = options.region ?? 'us-east-1';
  const stage = options.stage ?? 'local';
  const report = options.report ?? DEFAULT_REPORT;
  const retryDelayMs = options.retryDelayMs ?? 2000;
  const workers = options.workers ?? WORKERS;
  const loadConsumer = options.loadConsumer ?? importConsumer;

  // buildApp rather than startFauxqs: that one listens on 0.0.0.0; this stays on loopback.
  // The other stores are fauxqs's own (each store it is not given, it makes).
  const stores = options.s3DataDir ? ({ s3Store: await persistentS3Store(options.s3DataDir) } as BuildAppOptions['stores']) : undefined;
  const app = buildApp({ logger: false, defaultRegion: region, stores });
  const journal = options.journalFile ? new QueueJournal(options.journalFile) : null;
  /** Registry name of each main queue by physical name (the journal's queues; filled once created). */
  const journaled = new Map<string, string>();
  if (journal) {
    app.addHook('onSend', async (request: SendRequest, reply: { statusCode: number }, payload: unknown) =>
      journalSends(journal, journaled, request, reply.statusCode, payload),
    );
  }
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const endpoint = new URL(address).origin;
  const client = new SQSClient({ region, endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });

  const queues: Record<string, LocalQueue> = {};
  const env: Record<string, string> = { AWS_ENDPOINT_URL_SQS: endpoint };
  try {
    for (const spec of options.queues ?? QUEUES) {
      const fifo = spec.fifo ? { FifoQueue: 'true', ContentBasedDeduplication: 'false' } : {};
      const dlq = await client.send(
        new CreateQueueCommand({ QueueName: deadLetterQueueName(stage, spec), Attributes: { ...fifo, MessageRetentionPeriod: String(14 * 24 * 3600) } }),
      );
      const dlqArn = (await client.send(new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl!, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
      const main = await client.send(
        new CreateQueueCommand({
          QueueName: queueName(stage, spec),
          Attributes: {
            ...fifo,
            VisibilityTimeout: String(spec.visibilityTimeoutSeconds),
            RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: spec.maxReceiveCount }),
          },
        }),
      );
      const arn = (await client.send(new GetQueueAttributesCommand({ QueueUrl: main.QueueUrl!, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
      queues[spec.name] = { spec, url: main.QueueUrl!, arn, deadLetterUrl: dlq.QueueUrl! };
      env[spec.envVar] = main.QueueUrl!;
      journaled.set(queueName(stage, spec), spec.name);
    }
    if (journal) await replay(journal);
  } catch (err) {
    client.destroy();
    await app.close();
    journal?.close();
    throw err;
  }

  /** What the last process left unfinished is sent again (journaled anew), then marked done. */
  async function replay(from: QueueJournal): Promise<void> {
    const unfinished = from.unfinished();
    for (const m of unfinished) {
      const queue = queues[m.queue];
      if (queue) {
        await client.send(
          new SendMessageCommand({
            QueueUrl: queue.url,
            MessageBody: m.body,
            MessageGroupId: m.groupId,
            MessageDeduplicationId: m.deduplicationId,
            MessageAttributes: m.attributes as Record<string, MessageAttributeValue> | undefined,
          }),
        );
      }
      from.done(m.queue, m.id);
    }
    if (unfinished.length) report(`resent ${unfinished.length} message(s) left in the queues by the last run`);
  }

  const controller = new AbortController();
  const loops: Array<Promise<void>> = [];
  let consuming = false;

  async function poll(queue: LocalQueue, worker: WorkerSpec): Promise<void> {
    let handler: ConsumerHandler | undefined;
    while (!controller.signal.aborted) {
      let messages: Message[] = [];
      try {
        const out = await client.send(
          new ReceiveMessageCommand({
            QueueUrl: queue.url,
            MaxNumberOfMessages: Math.min(queue.spec.batchSize, 10),
            WaitTimeSeconds: 5,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
          { abortSignal: controller.signal },
        );
        messages = out.Messages ?? [];
      } catch (err) {
        if (controller.signal.aborted) return;
        report(`receive from ${queue.spec.name} failed`, { error: (err as Error).message });
        await pause(500);
        continue;
      }
      if (messages.length === 0) continue;
      const event: SQSEvent = { Records: messages.map((m) => toSqsRecord(m, queue.arn, region)) };
      let failed: Set<string>;
      try {
        handler ??= await loadConsumer(worker);
        const response = await handler(event, consumerContext(worker, stage, region));
        failed = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
      } catch (err) {
        // A thrown handler fails the whole batch, as in Lambda.
        report(`consumer ${worker.name} threw; the batch will be retried`, { error: (err as Error).message });
        failed = new Set(messages.map((m) => m.MessageId!));
      }
      await settle(queue, messages, failed);
    }
  }

  async function settle(queue: LocalQueue, messages: Message[], failed: Set<string>): Promise<void> {
    const done = messages.filter((m) => !failed.has(m.MessageId!));
    const retry = messages.filter((m) => failed.has(m.MessageId!));
    try {
      if (done.length) {
        await client.send(
          new DeleteMessageBatchCommand({ QueueUrl: queue.url, Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })) }),
        );
        for (const m of done) journal?.done(queue.spec.name, m.MessageId!);
      }
      if (retry.length) {
        const seconds = Math.min(Math.ceil(retryDelayMs / 1000), queue.spec.visibilityTimeoutSeconds);
        await client.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: queue.url,
            Entries: retry.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle!, VisibilityTimeout: seconds })),
          }),
        );
      }
    } catch (err) {
      if (!controller.signal.aborted) report(`settling a batch of ${queue.spec.name} failed`, { error: (err as Error).message });
    }
  }

  function pause(ms: number): Promise<void> {
    return new Promise((r) => {
      const t = setTimeout(r, ms);
      controller.signal.addEventListener(
        'abort',
        () => {
          clearTimeout(t);
          r();
        },
        { once: true },
      );
    });
  }

  function startConsumers(): void {
    if (consuming) return;
    consuming = true;
    for (const queue of Object.values(queues)) {
      const worker = workers.find((w) => w.name === queue.spec.consumer);
      if (!worker) {
        report(`queue ${queue.spec.name}: consumer '${queue.spec.consumer}' is not a registered worker`);
        continue;
      }
      loops.push(poll(queue, worker));
    }
  }

  if (!options.deferConsumers) startConsumers();

  return {
    endpoint,
    queues,
    env,
    startConsumers,
    async stop() {
      controller.abort();
      await Promise.allSettled(loops);
      client.destroy();
      await app.close();
      journal?.close();
    },
  };
}

interface SendEntry {
  Id?: string;
  QueueUrl?: string;
  MessageBody?: string;
  MessageGroupId?: string;
  MessageDeduplicationId?: string;
  MessageAttributes?: Record<string, unknown>;
}

/**
 * fauxqs's answer to a SendMessage / SendMessageBatch (AWS JSON protocol) of a journaled
 * queue, held until the messages it accepted are in the journal: a send the producer saw
 * succeed is never lost to a crash.
 */
interface SendRequest {
  headers: Record<string, unknown>;
  body: unknown;
}

function journalSends(journal: QueueJournal, journaled: ReadonlyMap<string, string>, request: SendRequest, status: number, payload: unknown): unknown {
  const target = request.headers['x-amz-target'];
  if (status !== 200 || (target !== 'AmazonSQS.SendMessage' && target !== 'AmazonSQS.SendMessageBatch') || typeof payload !== 'string') return payload;
  const body = request.body as SendEntry & { Entries?: SendEntry[] };
  const queue = journaled.get(body.QueueUrl?.slice(body.QueueUrl.lastIndexOf('/') + 1) ?? '');
  if (!queue) return payload;
  const answer = JSON.parse(payload) as { MessageId?: string; Successful?: Array<{ Id: string; MessageId: string }> };
  const accepted: Array<[SendEntry, string]> =
    target === 'AmazonSQS.SendMessage'
      ? answer.MessageId
        ? [[body, answer.MessageId]]
        : []
      : (answer.Successful ?? []).flatMap((s) => {
          const entry = body.Entries?.find((e) => e.Id === s.Id);
          return entry ? [[entry, s.MessageId] as [SendEntry, string]] : [];
        });
  for (const [entry, id] of accepted) {
    const message: JournalMessage = { queue, id, body: entry.MessageBody ?? '' };
    if (entry.MessageGroupId) message.groupId = entry.MessageGroupId;
    if (entry.MessageDeduplicationId) message.deduplicationId = entry.MessageDeduplicationId;
    if (entry.MessageAttributes && Object.keys(entry.MessageAttributes).length) message.attributes = entry.MessageAttributes;
    journal.sent(message);
  }
  return payload;
}

const consumerContext = (worker: WorkerSpec, stage: string, region: string) =>
  lambdaContext({
    functionName: `ai-gateway-${stage}-${worker.name}`,
    timeoutSeconds: worker.timeoutSeconds,
    memoryMb: 512,
    region,
    accountId: '000000000000',
  });
