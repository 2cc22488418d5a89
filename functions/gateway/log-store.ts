import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { createAwsJsonClient, retryKind, SQS } from '../shared/aws/json-client';
import { config } from '../shared/config';
import { batchedPuts } from '../shared/db/batched-puts';
import { putItem, UnprocessedItemsError, type Key } from '../shared/db/ops';
import { publishMetric } from '../shared/telemetry/emf';
import { log } from '../shared/telemetry/logger';
import type { RequestContext } from '../shared/telemetry/context';
import { chargeBudgets } from '../spend/load';
import type { BudgetCharge } from '../policies/budget-spend';
import { openedLogJournal } from './log-journal';

/**
 * How a request-log record is stored: in a shared BatchWriteItem with its budget charge sent
 * alongside (./request-log.ts); a write DynamoDB throttles (or fails for a moment) is retried
 * alone with backoff and full jitter for `REQUEST_LOG_RETRY_MS`; one that still fails goes to
 * the log-records queue, whose consumer (functions/workers/log-redrive.ts) writes it later and
 * counts its spend then. The budget charge was sent with the first write and is not sent again.
 */

export type LogItem = Key & Record<string, unknown>;

/** What the log-records queue carries: the stored item, as it would have been written. */
export interface DeadLetteredLogRecord {
  item: LogItem;
}

/** A record's budget charge, as the batched writer carries it to the group's summed charge. */
interface RecordCharge {
  charge: BudgetCharge;
  recordSk: string;
}

// Pure: bundles that import this module without logging (workers) drop the writer.
const putLogRecord = /* @__PURE__ */ batchedPuts<RecordCharge>('logs', {
  waitMs: () => config().requestLogBatchWaitMs,
  onSend: (tagged, slot) => {
    const charges = tagged.map((t) => t.charge);
    // Journaled (with a marker) where records are: replay can tell whether it was applied.
    const journaled = openedLogJournal()?.charge(
      tagged.map((t) => t.recordSk),
      slot,
    );
    return chargeBudgets(charges, journaled?.marker)
      .catch((err: unknown) => log.error('budget charges not written', { requests: charges.length, error: String(err) }, charges[0]?.context))
      .finally(journaled?.settle);
  },
});

/** A failure a later attempt may not meet: throttling (a 400 or items left unprocessed), a 5xx, a network error. */
export const isRetryable = (err: unknown): boolean => err instanceof UnprocessedItemsError || retryKind(err) !== undefined;

/** SendMessage through the AWS JSON client: the SDK's SQS client would double the gateway's cold-start code. */
const sqs = /* @__PURE__ */ createAwsJsonClient(SQS);

const RETRY_BASE_MS = 50;
const RETRY_CAP_MS = 1_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Store a record (and send its budget charge): resolves true once it is stored, false once it
 * is in the log-records queue instead (its spend is counted when the queue's consumer writes
 * it); rejects when it is neither (an invalid item, or the queue refused it too: logged).
 */
export async function storeLogRecord(item: LogItem, charge: BudgetCharge | undefined, context?: RequestContext): Promise<boolean> {
  let failure: unknown;
  try {
    await putLogRecord(item, charge && { charge, recordSk: item.sk });
    return true;
  } catch (err) {
    if (!isRetryable(err)) throw err;
    failure = err;
  }
  publishMetric('LogWriteThrottled', MetricUnit.Count, 1, [['service']], {});
  log.warn('request-log write throttled; retrying', { record_id: item.sk, error: errorText(failure) }, context);
  const deadline = Date.now() + config().requestLogRetryMs;
  for (let retry = 1; Date.now() < deadline; retry++) {
    await sleep(Math.min(Math.floor(Math.random() * Math.min(RETRY_BASE_MS * 2 ** retry, RETRY_CAP_MS)), deadline - Date.now()));
    try {
      await putItem('logs', item);
      return true;
    } catch (err) {
      if (!isRetryable(err)) throw err;
      failure = err;
    }
  }
  await deadLetter(item, failure, context);
  return false;
}

async function deadLetter(item: LogItem, failure: unknown, context: RequestContext | undefined): Promise<void> {
  const url = config().logRecordsQueueUrl;
  try {
    if (!url) throw new Error('LOG_RECORDS_QUEUE_URL is not set');
    const body: DeadLetteredLogRecord = { item };
    await sqs.send('SendMessage', { QueueUrl: url, MessageBody: JSON.stringify(body) });
  } catch (err) {
    log.error(
      'request-log record lost: its write and the log-records queue both failed',
      { record_id: item.sk, error: errorText(failure), queue_error: errorText(err) },
      context,
    );
    throw err;
  }
  publishMetric('LogWriteDeadLettered', MetricUnit.Count, 1, [['service']], {});
  log.error('request-log record sent to the log-records queue after its write kept failing', { record_id: item.sk, error: errorText(failure) }, context);
}

const errorText = (err: unknown) => (err instanceof Error ? `${err.name}: ${err.message}` : String(err));
