import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { deadLetteredLogRecord, redriveLogRecord } from '../gateway/log-redrive';
import { parseEvent } from '../shared/workflows/events';
import { createQueueConsumer } from '../shared/workflows/sqs';

/**
 * Consumer of the log-records queue: request-log records whose write kept failing (DynamoDB
 * throttling), written now with their spend counted once. A message that fails comes back
 * (a throttle that lasts), then goes to the queue's dead-letter queue (alarmed).
 */
const consume = createQueueConsumer(async (body) => redriveLogRecord(parseEvent(deadLetteredLogRecord, body, 'log-redrive')));

export const handler = (event: SQSEvent): Promise<SQSBatchResponse> => consume(event);
