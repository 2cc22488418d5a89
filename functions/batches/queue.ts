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

/** The next step of a native batch, after `delaySeconds` (the native queue is a standard queue: no group, no deduplication). */
export async function sendNativeStep(batch: { workspace_id: string; id: string }, delaySeconds = 0): Promise<void> {
  const url = config().batchNativeQueueUrl;
  if (!url) throw new Error('BATCH_NATIVE_QUEUE_URL is not set');
  const msg: BatchMessage = { kind: 'native', workspaceId: batch.workspace_id, batchId: batch.id };
  await sendMessage(url, msg, { delaySeconds: Math.min(Math.max(0, Math.round(delaySeconds)), 900) });
}

const id = z.string().check(z.minLength(1));
const offset = z.number().check(z.int(), z.nonnegative());
const ref = { workspaceId: id, batchId: id };

/** What the batch worker accepts from its queue (anything else is dropped as malformed). */
export const batchMessageSchema: ZodMiniType<BatchMessage> = z.discriminatedUnion('kind', [
  z.looseObject({ kind: z.literal('validate'), ...ref }),
  z.looseObject({ kind: z.literal('finalize'), ...ref }),
  z.looseObject({ kind: z.literal('native'), ...ref }),
  z.looseObject({ kind: z.literal('chunk'), ...ref, chunk: offset, start: offset, end: offset, firstLine: offset, lastLine: offset }),
]);
