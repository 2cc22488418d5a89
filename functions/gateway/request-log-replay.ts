import { putNew } from '../shared/db/ops';
import { replayJournal } from '../shared/db/put-journal';
import { chargeBudgets, type BudgetCharge, type ChargeMarker } from '../policies/budget-spend';
import { unsentMarkerAttr, type JournaledCharge, type JournaledRecord, type LogJournalEntry } from './log-journal';

const PARALLEL_PUTS = 16;

/**
 * The request-log records a dead process had journaled (./log-journal.ts) and DynamoDB may
 * not hold, and their budget charges:
 *
 * - each record is put only if its key is absent;
 * - each journaled group charge is sent again under its marker, which a counter that already
 *   has it refuses;
 * - the records whose charge was never sent (no group names them) are charged, summed per
 *   writer, under the writer's marker for such charges, so a replay cut short and run again
 *   does not charge them twice.
 *
 * Run at start, before anything serves or re-derives the spend counters from the records.
 */
export async function replayRequestLogJournal(dir: string): Promise<{ entries: number; restored: number }> {
  let restored = 0;
  const { entries } = await replayJournal(dir, async (journaled) => {
    const { records, groups } = splitEntries(journaled as LogJournalEntry[]);
    const put = new Set<string>();
    for (let i = 0; i < records.length; i += PARALLEL_PUTS) {
      await Promise.all(
        records.slice(i, i + PARALLEL_PUTS).map(async ({ item }) => {
          if (item?.pk && (await putNew('logs', item))) put.add(item.sk);
        }),
      );
    }
    restored = put.size;
    await chargeInOrder(chargesToReplay(records, groups, put));
  });
  return { entries, restored };
}

function splitEntries(entries: LogJournalEntry[]): { records: JournaledRecord[]; groups: JournaledCharge['charged'][] } {
  const records: JournaledRecord[] = [];
  const groups: JournaledCharge['charged'][] = [];
  for (const entry of entries) {
    if ('charged' in entry) groups.push(entry.charged);
    else records.push(entry);
  }
  return { records, groups };
}

interface ReplayedCharge {
  charges: BudgetCharge[];
  marker?: ChargeMarker;
}

/** Every charge of the journal with the marker it is (re)sent under; `put`: the records replay has just stored. */
function chargesToReplay(records: JournaledRecord[], groups: JournaledCharge['charged'][], put: Set<string>): ReplayedCharge[] {
  const bySk = new Map(records.map((r) => [r.item?.sk, r]));
  const sent = new Set<string>();
  const replays: ReplayedCharge[] = [];
  for (const { records: sks, marker } of groups) {
    const charges = sks.flatMap((sk) => {
      sent.add(sk);
      const charge = bySk.get(sk)?.charge;
      return charge ? [charge] : [];
    });
    replays.push({ charges, marker: { ...marker, replay: true } });
  }
  // A writer's charges never sent, summed into one charge under its last seq: the journal
  // holds the same ones for a replay run again, so the sum and its marker are the same too.
  const unsent = new Map<string, ReplayedCharge & { marker: ChargeMarker }>();
  for (const { item, charge, writer, seq } of records) {
    if (!charge || sent.has(item?.sk)) continue;
    if (writer && seq) {
      const attr = unsentMarkerAttr(writer);
      const sum = unsent.get(attr);
      if (!sum) unsent.set(attr, { charges: [charge], marker: { attr, seq, replay: true } });
      else {
        sum.charges.push(charge);
        if (seq > sum.marker.seq) sum.marker.seq = seq;
      }
    }
    // A journal written before markers: its charge went with the record's write, or not at all.
    else if (put.has(item.sk)) replays.push({ charges: [charge] });
  }
  return [...replays, ...unsent.values()];
}

/** Sent one at a time per marker attribute, in `seq` order (a marker refuses a seq below its own). */
async function chargeInOrder(replays: ReplayedCharge[]): Promise<void> {
  const byAttr = new Map<string, ReplayedCharge[]>();
  for (const r of replays) {
    const attr = r.marker?.attr ?? '';
    const list = byAttr.get(attr);
    if (list) list.push(r);
    else byAttr.set(attr, [r]);
  }
  const seqOf = (r: ReplayedCharge) => r.marker?.seq ?? '';
  await Promise.all(
    [...byAttr.values()].map(async (list) => {
      list.sort((a, b) => (seqOf(a) < seqOf(b) ? -1 : seqOf(a) > seqOf(b) ? 1 : 0));
      for (const { charges, marker } of list) await chargeBudgets(charges, marker);
    }),
  );
}
