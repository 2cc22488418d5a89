import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openPutJournal, replayJournal } from '../../functions/shared/db/put-journal';
import { LogJournal, writerStart } from '../../functions/gateway/log-journal';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'put-journal-'));
});
afterEach(() => {
  vi.useRealTimers();
  rmSync(dir, { recursive: true, force: true });
});

const replayAll = async (from: string) => {
  const seen: unknown[] = [];
  const counts = await replayJournal(from, async (entries) => {
    seen.push(...entries);
  });
  return { seen, ...counts };
};

describe('put journal', () => {
  it('keeps every appended entry on disk at once, for a process that dies before its writes settle', async () => {
    const journal = openPutJournal(dir, 'logs');
    journal.append({ n: 1 });
    journal.append({ n: 2 });
    // No settle, no sweep: what a `kill -9` leaves behind.
    const { seen, entries, files } = await replayAll(dir);
    expect(seen).toEqual([{ n: 1 }, { n: 2 }]);
    expect(entries).toBe(2);
    expect(files).toBe(1);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('deletes a segment only once all its entries are settled and it has been kept long enough', () => {
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] });
    const journal = openPutJournal(dir, 'logs');
    const settleFirst = journal.append({ n: 1 });
    const settleSecond = journal.append({ n: 2 });
    settleFirst();
    vi.advanceTimersByTime(10_000);
    expect(readdirSync(dir)).toHaveLength(1); // one entry still pending
    settleSecond();
    settleSecond(); // settling twice counts once
    vi.advanceTimersByTime(1_000);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('keeps settled entries for a while, for a store that acknowledges before it commits', () => {
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] });
    const journal = openPutJournal(dir, 'logs');
    journal.append({ n: 1 })();
    vi.advanceTimersByTime(2_000);
    expect(readdirSync(dir)).toHaveLength(1);
    vi.advanceTimersByTime(4_000);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('starts a new segment every second, so old ones can go while traffic goes on', () => {
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] });
    const journal = openPutJournal(dir, 'logs');
    for (let i = 0; i < 8; i++) {
      journal.append({ n: i })();
      vi.advanceTimersByTime(1_000);
    }
    // Only the segments of the last five seconds or so are kept.
    expect(readdirSync(dir).length).toBeGreaterThanOrEqual(4);
    expect(readdirSync(dir).length).toBeLessThanOrEqual(6);
  });

  it('deletes segments oldest first: a settled one waits for an older one still pending', () => {
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] });
    const journal = openPutJournal(dir, 'logs');
    const settleOld = journal.append({ record: 1 });
    vi.advanceTimersByTime(1_000);
    // A later entry (say, the charge that sums the record above) settles first.
    journal.append({ charge: [1] })();
    vi.advanceTimersByTime(10_000);
    expect(readdirSync(dir)).toHaveLength(2);
    settleOld();
    vi.advanceTimersByTime(1_000);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('gives replay the entries of every file at once, oldest file first', async () => {
    writeFileSync(join(dir, 'logs-1-0-abc-000001.jsonl'), '{"n":2}\n');
    writeFileSync(join(dir, 'logs-1-0-abc-000000.jsonl'), '{"n":1}\n');
    const batches: unknown[][] = [];
    expect(await replayJournal(dir, async (entries) => void batches.push(entries))).toEqual({ files: 2, entries: 2 });
    expect(batches).toEqual([[{ n: 1 }, { n: 2 }]]);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('skips a torn last line (the crash came during its append)', async () => {
    const file = join(dir, 'logs-1-0-abc-000000.jsonl');
    writeFileSync(file, '{"n":1}\n{"n":2}\n');
    appendFileSync(file, '{"n":3,"item":{"pk":"W');
    const { seen } = await replayAll(dir);
    expect(seen).toEqual([{ n: 1 }, { n: 2 }]);
    expect(existsSync(file)).toBe(false);
  });

  it('makes its folder again if it was removed while the process ran', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] });
    const journal = openPutJournal(dir, 'logs');
    journal.append({ n: 1 });
    rmSync(dir, { recursive: true, force: true });
    vi.advanceTimersByTime(1_000);
    journal.append({ n: 2 });
    vi.useRealTimers();
    expect((await replayAll(dir)).seen).toEqual([{ n: 2 }]);
  });

  it('a request-log journal that cannot be written gives no settle and no marker, and throws nothing: the writes go on without it', () => {
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] });
    const journal = new LogJournal(openPutJournal(dir, 'logs'));
    const item = { pk: 'W#1', sk: 'log_1' };
    expect(journal.record(item, undefined)).toBeTypeOf('function');
    // The folder becomes a file: neither the segment nor the folder can be made again.
    rmSync(dir, { recursive: true, force: true });
    writeFileSync(dir, 'not a folder');
    vi.advanceTimersByTime(1_000);
    expect(journal.record(item, undefined)).toBeUndefined();
    expect(journal.charge(['log_1'], 0)).toBeUndefined();
    rmSync(dir, { force: true });
    mkdirSync(dir);
  });

  it("a writer's start never goes back, whatever the clock does: its seqs stay above those it left before", () => {
    expect(writerStart(dir, 'cw_1_0', 2_000_000)).toBe(2_000_000);
    // A restart after the clock went back by a minute.
    expect(writerStart(dir, 'cw_1_0', 1_940_000)).toBe(2_000_001);
    expect(writerStart(dir, 'cw_1_0', 3_000_000)).toBe(3_000_000);
    // Another writer's start is its own.
    expect(writerStart(dir, 'cw_2_0', 1_000)).toBe(1_000);
  });

  it('replays nothing from a folder that does not exist', async () => {
    expect(await replayAll(join(dir, 'missing'))).toEqual({ seen: [], files: 0, entries: 0 });
  });
});
