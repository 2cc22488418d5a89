import { existsSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** How often a running gateway touches its marker: its time says when the process was last alive. */
const HEARTBEAT_MS = 10_000;
/** Re-derived from a minute before the last heartbeat: what a dead process can have held is far younger. */
const MARGIN_SECONDS = 60;

/**
 * The local runtime's `running` marker in its data folder: present while a gateway runs,
 * removed by a clean stop. Found at start, it means the last gateway on this folder died
 * (`kill -9`, a crash, power): the request-log records it had journaled but not stored are
 * written (functions/gateway/request-log-replay.ts), then spend-counter increments it held are re-derived from the
 * stored request-log records (functions/spend/rederive.ts) before this one serves.
 */
export async function markRunning(dataDir: string): Promise<{ rederived: number; restored: number; clear: () => void }> {
  const file = join(dataDir, 'running');
  let rederived = 0;
  // Records a dead gateway had answered but not stored are written first, so the re-derivation counts them.
  const { replayRequestLogJournal } = await import('../../functions/gateway/request-log-replay');
  const { restored } = await replayRequestLogJournal(join(dataDir, 'request-log-journal'));
  if (existsSync(file)) {
    const lastAlive = Math.floor(statSync(file).mtimeMs / 1000);
    const { rederiveSpendCounters } = await import('../../functions/spend/rederive');
    // The dead gateway wrote nothing after its last heartbeat plus one interval.
    rederived = await rederiveSpendCounters(lastAlive - MARGIN_SECONDS, lastAlive + HEARTBEAT_MS / 1000);
  }
  writeFileSync(file, `${JSON.stringify({ pid: process.pid, started_at: new Date().toISOString() })}\n`);
  const heartbeat = setInterval(() => {
    const now = new Date();
    try {
      utimesSync(file, now, now);
    } catch {
      /* the folder went away: nothing to mark */
    }
  }, HEARTBEAT_MS).unref();
  return {
    rederived,
    restored,
    clear: () => {
      clearInterval(heartbeat);
      try {
        unlinkSync(file);
      } catch {
        /* already gone */
      }
    },
  };
}
