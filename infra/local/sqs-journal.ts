import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * The durability of the local queues (fauxqs keeps messages in memory only): every message
 * a producer sends is appended to a journal before the send is answered, every message the
 * poller deletes is marked done, and at start-up the messages sent and not done are sent
 * again (infra/local/sqs.ts). Delivery stays at least once, as in SQS: a message whose
 * consumer finished just before a crash may come back, and consumers are idempotent.
 *
 * One JSON object per line. Writes are synchronous appends: a line whose write returned is
 * in the kernel, so it survives the gateway's process being killed (`kill -9`); it is not
 * flushed to disk per message, so a power cut may lose the last ones.
 */

export interface JournalMessage {
  /** Registry name of the queue (QueueSpec.name). */
  queue: string;
  /** MessageId fauxqs gave the message. */
  id: string;
  body: string;
  groupId?: string;
  deduplicationId?: string;
  attributes?: Record<string, unknown>;
}

type Line = ({ op: 'sent' } & JournalMessage) | { op: 'done'; queue: string; id: string };

/** Lines appended since the last rewrite before the journal is rewritten with what is pending. */
const COMPACT_AFTER_LINES = 5000;

export class QueueJournal {
  private readonly pending = new Map<string, JournalMessage>();
  private fd: number;
  private lines = 0;
  private closed = false;

  /** Opens (creates) the journal; what it holds from before is `pending()` until `replayed`. */
  constructor(readonly path: string) {
    mkdirSync(dirname(path), { recursive: true });
    if (existsSync(path)) {
      for (const text of readFileSync(path, 'utf8').split('\n')) {
        const line = parseLine(text);
        if (line?.op === 'sent') this.pending.set(keyOf(line.queue, line.id), messageOf(line));
        else if (line?.op === 'done') this.pending.delete(keyOf(line.queue, line.id));
      }
    }
    this.rewrite();
    this.fd = openSync(path, 'a');
  }

  /** Messages sent and never deleted, oldest first. */
  unfinished(): JournalMessage[] {
    return [...this.pending.values()];
  }

  sent(message: JournalMessage): void {
    this.pending.set(keyOf(message.queue, message.id), message);
    this.append({ op: 'sent', ...message });
  }

  done(queue: string, id: string): void {
    if (!this.pending.delete(keyOf(queue, id))) return;
    this.append({ op: 'done', queue, id });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
    this.rewrite();
  }

  private append(line: Line): void {
    if (this.closed) return;
    appendFileSync(this.fd, `${JSON.stringify(line)}\n`);
    if (++this.lines >= COMPACT_AFTER_LINES) {
      closeSync(this.fd);
      this.rewrite();
      this.fd = openSync(this.path, 'a');
    }
  }

  /** The journal replaced, atomically, by the messages still pending (a crash keeps the old one). */
  private rewrite(): void {
    const tmp = `${this.path}.tmp`;
    writeFileSync(tmp, [...this.pending.values()].map((m) => `${JSON.stringify({ op: 'sent', ...m })}\n`).join(''));
    renameSync(tmp, this.path);
    this.lines = 0;
  }
}

const keyOf = (queue: string, id: string) => `${queue}\n${id}`;

function messageOf(line: { op: 'sent' } & JournalMessage): JournalMessage {
  const { op: _op, ...message } = line;
  return message;
}

/** A torn last line (a crash during the append) is skipped: its send was never answered. */
function parseLine(text: string): Line | undefined {
  if (!text.trim()) return undefined;
  try {
    const line = JSON.parse(text) as Partial<Line>;
    return typeof line.queue === 'string' && typeof line.id === 'string' && (line.op === 'done' || (line.op === 'sent' && typeof line.body === 'string'))
      ? (line as Line)
      : undefined;
  } catch {
    return undefined;
  }
}
