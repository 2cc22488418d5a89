import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { handleBatchMessage } from '../batches/engine';
import { batchMessageSchema } from '../batches/queue';
import { parseEvent } from '../shared/workflows/events';
import { createQueueConsumer } from '../shared/workflows/sqs';

/**
 * Consumer of the batch queue (FIFO, group = workspace): validates a batch, answers a chunk
 * of its lines, or finalizes it (functions/batches/engine.ts). A message that fails comes
 * back and does only what is left: lines already answered are never answered again.
 */
const consume = createQueueConsumer(async (body) => handleBatchMessage(parseEvent(batchMessageSchema, body, 'batch-run')));

export const handler = (event: SQSEvent): Promise<SQSBatchResponse> => consume(event);
