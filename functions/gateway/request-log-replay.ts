import { putNew } from '../shared/db/ops';
import { replayJournal } from '../shared/db/put-journal';
import { chargeBudgets } from '../policies/budget-spend';
import type { JournaledRecord } from './request-log';

const PARALLEL_PUTS = 16;

/**
 * The request-log records a dead process had journaled (request-log.ts) and DynamoDB may not
 * hold: each is put only if its key is absent, and only then is its budget charge applied
 * (a record that is there was written with its charge, as one group). Run at start, before
 * anything serves or re-derives the spend counters from the records.
 */
export async function replayRequestLogJournal(dir: string): Promise<{ entries: number; restored: number }> {
  let restored = 0;
  const { entries } = await replayJournal(dir, async (journaled) => {
    const records = journaled as JournaledRecord[];
    for (let i = 0; i < records.length; i += PARALLEL_PUTS) {
      await Promise.all(
        records.slice(i, i + PARALLEL_PUTS).map(async ({ item, charge }) => {
          if (!item?.pk || !(await putNew('logs', item))) return;
          restored++;
          if (charge) await chargeBudgets([charge]);
        }),
      );
    }
  });
  return { entries, restored };
}
