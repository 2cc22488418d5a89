/**
 * Token usage of an Anthropic answer passed through unchanged, read as its bytes go by, so
 * the request log and token policies see it as they do on chat. The bytes are forwarded
 * untouched and as they arrive; only the usage fields are parsed.
 */
import { Transform, type Readable } from 'node:stream';
import { anthropicUsage } from '../providers/anthropic/stream';
import type { Usage } from '../providers/types';

/** A JSON message larger than this is forwarded without its usage being read. */
const MAX_JSON_BYTES = 4 * 1024 * 1024;

type Counts = Record<string, number | undefined>;

function parse(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** `message_start` carries the input counts, `message_delta` the output (and, lately, final input) counts. */
function sseCounts(line: string, counts: Counts): void {
  if (!line.startsWith('data:')) return;
  const event = parse(line.slice(5).trim());
  if (!event) return;
  const usage =
    event.type === 'message_start'
      ? (event.message as { usage?: Counts } | undefined)?.usage
      : event.type === 'message_delta'
        ? (event.usage as Counts | undefined)
        : undefined;
  if (!usage) return;
  for (const [key, value] of Object.entries(usage)) if (typeof value === 'number') counts[key] = value;
}

/** Forward `body`, calling `onUsage` once it has ended with the usage it stated (if any). */
export function watchUsage(body: Readable, stream: boolean, onUsage: (usage: Usage) => void): Readable {
  const counts: Counts = {};
  let pending = '';
  const json: Buffer[] = [];
  let jsonBytes = 0;
  const watcher = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (stream) {
        const lines = (pending + chunk.toString('utf8')).split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) sseCounts(line, counts);
      } else if (jsonBytes <= MAX_JSON_BYTES) {
        json.push(chunk);
        jsonBytes += chunk.length;
      }
      done(null, chunk);
    },
    flush(done) {
      if (stream) sseCounts(pending, counts);
      else if (jsonBytes <= MAX_JSON_BYTES) Object.assign(counts, (parse(Buffer.concat(json).toString('utf8'))?.usage as Counts | undefined) ?? {});
      if (Object.keys(counts).length) onUsage(anthropicUsage(counts));
      done();
    },
  });
  body.on('error', (err) => watcher.destroy(err));
  watcher.on('close', () => {
    if (!body.destroyed) body.destroy();
  });
  return body.pipe(watcher);
}
