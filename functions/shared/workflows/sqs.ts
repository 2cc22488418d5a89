import { BatchProcessor, EventType, processPartialResponse, SqsFifoPartialProcessorAsync } from '@aws-lambda-powertools/batch';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { log } from '../telemetry/logger';
import { config } from '../config';
import { MalformedEventError } from './events';

/**
 * SQS for producers (API functions) and the shape of every queue consumer. One client per
 * container; the endpoint comes from the SDK's settings (AWS_ENDPOINT_URL_SQS locally), not
 * from the queue URL's host (`useQueueUrlAsEndpoint: false`): in AWS both are the regional
 * endpoint, and a local queue URL's host need not resolve.
 */
const client = new SQSClient({ region: config().region, maxAttempts: 3, useQueueUrlAsEndpoint: false });

export interface SendOptions {
  /** FIFO queues: the ordering group (e.g. the thread id: one run per thread at a time). */
  groupId?: string;
  /** FIFO queues: the deduplication id (e.g. the run id: a resend within 5 min is dropped). */
  deduplicationId?: string;
  /** Standard queues only: seconds before the message becomes visible (0-900). */
  delaySeconds?: number;
}

export async function sendMessage(queueUrl: string, body: unknown, opts: SendOptions = {}): Promise<string | undefined> {
  const out = await client.send(
    new SendMessageCommand({
      QueueUrl: queueUrl,
      MessageBody: JSON.stringify(body),
      MessageGroupId: opts.groupId,
      MessageDeduplicationId: opts.deduplicationId,
      DelaySeconds: opts.delaySeconds,
    }),
  );
  return out.MessageId;
}

/**
 * A queue consumer for the Lambda SQS event source mapping with `reportBatchItemFailures`,
 * on Powertools' batch utility: each record is processed on its own; a record that throws
 * is reported back (and redelivered after the visibility timeout, then dead-lettered), the
 * others are deleted. On FIFO queues (SqsFifoPartialProcessorAsync, `skipGroupOnError`)
 * the records after a failed one of the same group are reported too, so a group's order
 * is kept while other groups go on. A batch that fails entirely is answered, not thrown,
 * like any other.
 *
 * A body that is not JSON, or that `handle` rejects as a MalformedEventError, can never
 * succeed: it is dropped (logged) rather than retried into the dead-letter queue.
 */
export function createQueueConsumer(handle: (body: unknown, record: SQSRecord) => Promise<void>) {
  async function processRecord(record: SQSRecord): Promise<void> {
    let body: unknown;
    try {
      body = JSON.parse(record.body);
    } catch {
      log.error('queue message is not JSON; dropped', { message_id: record.messageId });
      return;
    }
    try {
      await handle(body, record);
    } catch (err) {
      if (err instanceof MalformedEventError) {
        log.error('queue message is malformed; dropped', { message_id: record.messageId, issues: err.issues });
        return;
      }
      log.warn('queue message failed; it will be redelivered', {
        message_id: record.messageId,
        receive_count: record.attributes?.ApproximateReceiveCount,
        error: err instanceof Error ? { name: err.name, message: err.message } : String(err),
      });
      throw err;
    }
  }
  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    // A processor keeps the batch's state: one per invocation.
    if (event.Records?.[0]?.eventSourceARN?.endsWith('.fifo')) {
      return processPartialResponse(event, processRecord, new SqsFifoPartialProcessorAsync(), { skipGroupOnError: true, throwOnFullBatchFailure: false });
    }
    return processPartialResponse(event, processRecord, new BatchProcessor(EventType.SQS), { throwOnFullBatchFailure: false });
  };
}
