import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { log } from '../telemetry/logger';
import { config } from '../config';

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
 * A queue consumer for the Lambda SQS event source mapping with `reportBatchItemFailures`:
 * each record is processed on its own; a record that throws is reported back (and
 * redelivered after the visibility timeout, then dead-lettered), the others are deleted.
 * On FIFO queues the records after a failed one of the same group are reported too, so a
 * group's order is kept.
 */
export function createQueueConsumer(handle: (body: unknown, record: SQSRecord) => Promise<void>) {
  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    const failures: SQSBatchResponse['batchItemFailures'] = [];
    const failedGroups = new Set<string>();
    for (const record of event.Records) {
      const group = record.attributes?.MessageGroupId;
      if (group && failedGroups.has(group)) {
        failures.push({ itemIdentifier: record.messageId });
        continue;
      }
      try {
        let body: unknown;
        try {
          body = JSON.parse(record.body);
        } catch {
          // Not JSON: it can never succeed; drop it (logged) rather than loop to the DLQ.
          log.error('queue message is not JSON; dropped', { message_id: record.messageId });
          continue;
        }
        await handle(body, record);
      } catch (err) {
        log.warn('queue message failed; it will be redelivered', {
          message_id: record.messageId,
          receive_count: record.attributes?.ApproximateReceiveCount,
          error: err instanceof Error ? { name: err.name, message: err.message } : String(err),
        });
        failures.push({ itemIdentifier: record.messageId });
        if (group) failedGroups.add(group);
      }
    }
    return { batchItemFailures: failures };
  };
}
