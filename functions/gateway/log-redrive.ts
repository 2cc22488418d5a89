import { putNew } from '../shared/db/ops';
import { z } from '../shared/validation';
import { log } from '../shared/telemetry/logger';
import { recordSpend } from '../spend/counters';
import type { RequestLogRecord } from '../spend/request-record';
import type { DeadLetteredLogRecord } from './log-store';

const key = z.string().check(z.minLength(1));

/** A message of the log-records queue (./log-store.ts): anything else is malformed. */
export const deadLetteredLogRecord = z.looseObject({
  item: z.looseObject({ pk: key, sk: key, workspace_id: key, created_at: z.number() }),
}) as unknown as z.ZodMiniType<DeadLetteredLogRecord>;

/**
 * Write a record whose write kept failing, and count its spend: once, however often the
 * message comes (the put only creates). Its budget charge went with its first write. A
 * message that comes again after the put but before the count (a crash between them) finds
 * the record stored and counts nothing: the spend re-derivation (functions/spend/rederive.ts)
 * sets counters from the stored records.
 */
export async function redriveLogRecord(message: DeadLetteredLogRecord): Promise<void> {
  const created = await putNew('logs', message.item);
  if (created) await recordSpend(message.item as unknown as RequestLogRecord);
  log.info(created ? 'dead-lettered request-log record written' : 'dead-lettered request-log record was already stored', { record_id: message.item.sk });
}
