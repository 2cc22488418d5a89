import { appendFileSync, copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalSqs, type LocalSqs } from '../../infra/local/sqs';
import { QueueJournal } from '../../infra/local/sqs-journal';
import type { QueueSpec, WorkerSpec } from '../../infra/workflows/registry';

// The local queues are durable with a journal (infra/local/sqs-journal.ts): what the journal
// holds when the process dies (a copy taken while it runs stands for a `kill -9`) is sent
// again by the next start, and only that. The crash of the whole runtime is covered by
// test/integration/crash-runs.test.ts.

const queues: QueueSpec[] = [
  { name: 'j-std', fifo: false, envVar: 'J_STD_QUEUE_URL', consumer: 'j-std', batchSize: 1, maxReceiveCount: 5, visibilityTimeoutSeconds: 30, producers: [] },
  { name: 'j-fifo', fifo: true, envVar: 'J_FIFO_QUEUE_URL', consumer: 'j-fifo', batchSize: 1, maxReceiveCount: 5, visibilityTimeoutSeconds: 30, producers: [] },
];
const workers: WorkerSpec[] = queues.map((q) => ({ name: q.consumer, entry: 'unused', kind: 'queue-consumer', description: 'test', timeoutSeconds: 5 }));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(check: () => boolean, what: string) {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

type Seen = { id: string; group?: string };
const dir = mkdtempSync(join(tmpdir(), 'queue-journal-'));
let shared: typeof import('../../functions/shared/workflows/sqs');

/** A local SQS with the journal; `hold` ids are held by their consumer until `release()`, then fail. */
async function start(journalFile: string, seen: Seen[], hold: Set<string> = new Set()) {
  const held: Array<() => void> = [];
  const consumer = async (event: SQSEvent) => {
    const failures: Array<{ itemIdentifier: string }> = [];
    for (const r of event.Records as SQSRecord[]) {
      const id = (JSON.parse(r.body) as { id: string }).id;
      seen.push({ id, group: r.attributes.MessageGroupId });
      if (hold.has(id)) {
        await new Promise<void>((resolve) => held.push(resolve));
        failures.push({ itemIdentifier: r.messageId });
      }
    }
    return { batchItemFailures: failures };
  };
  const sqs: LocalSqs = await startLocalSqs({
    queues,
    workers,
    journalFile,
    report: () => undefined,
    deferConsumers: true,
    loadConsumer: async () => consumer,
  });
  Object.assign(process.env, sqs.env);
  shared ??= await import('../../functions/shared/workflows/sqs');
  sqs.startConsumers();
  return { sqs, release: () => held.splice(0).forEach((r) => r()) };
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('local queue journal', () => {
  const journal = join(dir, 'first', 'sqs.jsonl');
  const atCrash = join(dir, 'crash', 'sqs.jsonl');
  const firstSeen: Seen[] = [];
  const secondSeen: Seen[] = [];

  beforeAll(async () => {
    const first = await start(journal, firstSeen, new Set(['in-flight', 'fifo-in-flight']));
    const std = first.sqs.queues['j-std']!.url;
    const fifo = first.sqs.queues['j-fifo']!.url;
    await shared.sendMessage(std, { id: 'consumed' });
    await until(() => firstSeen.some((s) => s.id === 'consumed'), 'the first message');
    await sleep(200); // deleted (and marked done) after its consumer returned
    await shared.sendMessage(std, { id: 'in-flight' });
    await until(() => firstSeen.some((s) => s.id === 'in-flight'), 'the held message');
    await shared.sendMessage(std, { id: 'waiting' });
    await shared.sendMessage(fifo, { id: 'fifo-in-flight' }, { groupId: 'thread-a', deduplicationId: 'f1' });
    await until(() => firstSeen.some((s) => s.id === 'fifo-in-flight'), 'the held FIFO message');
    await shared.sendMessage(fifo, { id: 'fifo-next' }, { groupId: 'thread-a', deduplicationId: 'f2' });
    // What a `kill -9` now would leave on disk.
    mkdirSync(join(dir, 'crash'), { recursive: true });
    copyFileSync(journal, atCrash);
    first.release();
    await first.sqs.stop();
  });

  it('sends again, after a restart, every message that was not done, keeping its FIFO group and order', async () => {
    const second = await start(atCrash, secondSeen);
    try {
      await until(() => ['in-flight', 'waiting', 'fifo-in-flight', 'fifo-next'].every((id) => secondSeen.some((s) => s.id === id)), 'the resent messages');
      await sleep(300);
      expect(secondSeen.map((s) => s.id).sort()).toEqual(['fifo-in-flight', 'fifo-next', 'in-flight', 'waiting']);
      const fifo = secondSeen.filter((s) => s.id.startsWith('fifo'));
      expect(fifo).toEqual([
        { id: 'fifo-in-flight', group: 'thread-a' },
        { id: 'fifo-next', group: 'thread-a' },
      ]);
    } finally {
      await second.sqs.stop();
    }
    // Delivered and deleted this time: nothing is left for a third start.
    expect(new QueueJournal(atCrash).unfinished()).toEqual([]);
  });

  it('skips a torn last line (a crash during an append)', async () => {
    const file = join(dir, 'torn.jsonl');
    appendFileSync(file, `${JSON.stringify({ op: 'sent', queue: 'j-std', id: 'm1', body: '{"id":"kept"}' })}\n{"op":"sent","queue":"j-std","id":"m2","bo`);
    const j = new QueueJournal(file);
    expect(j.unfinished()).toEqual([{ queue: 'j-std', id: 'm1', body: '{"id":"kept"}' }]);
    j.close();
  });
});
