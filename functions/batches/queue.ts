/** The batch queue (BATCH_QUEUE_URL): FIFO, group = workspace, so a workspace's chunks run one at a time. */
import type { ZodMiniType } from 'zod/mini';
import { config } from '../shared/config';
import { z } from '../shared/validation';
import { sendMessage } from '../shared/workflows/sqs';
import type { BatchMessage } from './types';

function dedupId(msg: BatchMessage): string {
  return msg.kind === 'chunk' ? `${msg.batchId}-chunk-${msg.chunk}` : `${msg.batchId}-${msg.kind}-${Date.now()}`;
}

export async function sendBatchMessage(msg: BatchMessage): Promise<void> {
  const url = config().batchQueueUrl;
  if (!url) throw new Error('BATCH_QUEUE_URL is not set');
  await sendMessage(url, msg, { groupId: msg.workspaceId, deduplicationId: dedupId(msg) });
}

const id = z.string().check(z.minLength(1));
const offset = z.number().check(z.int(), z.nonnegative());
const ref = { workspaceId: id, batchId: id };

/** What the batch worker accepts from its queue (anything else is dropped as malformed). */
export const batchMessageSchema: ZodMiniType<BatchMessage> = z.discriminatedUnion('kind', [
  z.looseObject({ kind: z.literal('validate'), ...ref }),
  z.looseObject({ kind: z.literal('finalize'), ...ref }),
  z.looseObject({ kind: z.literal('chunk'), ...ref, chunk: offset, start: offset, end: offset, firstLine: offset, lastLine: offset }),
]);
