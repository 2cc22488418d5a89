/**
 * AWS binary event-stream framing. Bytes arrive
 * split anywhere; they are buffered until a whole frame (its total length is the first
 * 4 bytes, big-endian) is present, then decoded (CRC-checked) with EventStreamCodec.
 */
import { EventStreamCodec } from '@smithy/eventstream-codec';

const toUtf8 = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
const fromUtf8 = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'utf8'));

export const eventStreamCodec = (): EventStreamCodec => new EventStreamCodec(toUtf8, fromUtf8);

/** Prelude (12) + message CRC (4). */
const MIN_FRAME = 16;
/** Far above any Bedrock event; guards against a garbage length prefix. */
const MAX_FRAME = 16 * 1024 * 1024;

export interface EventFrame {
  /** `:message-type`: `event`, `exception` or `error`. */
  messageType: string;
  /** String-valued headers (`:event-type`, `:exception-type`, `:error-code`, …). */
  headers: Record<string, string>;
  body: Uint8Array;
  /** The body as UTF-8 text. */
  text(): string;
}

export class EventStreamFramer {
  private buffer = new Uint8Array(0);
  private readonly codec = eventStreamCodec();

  /** Bytes received but not yet a whole frame. */
  get pending(): number {
    return this.buffer.byteLength;
  }

  /**
   * Frames completed by `bytes`, in order. A corrupt frame (bad length or CRC) ends the
   * list with `error`; the frames before it are still returned.
   */
  push(bytes: Uint8Array): { frames: EventFrame[]; error?: string } {
    // Always copy: the caller's chunk may be a view into a pooled buffer.
    const joined = new Uint8Array(this.buffer.byteLength + bytes.byteLength);
    joined.set(this.buffer, 0);
    joined.set(bytes, this.buffer.byteLength);
    this.buffer = joined;
    const frames: EventFrame[] = [];
    while (this.buffer.byteLength >= 4) {
      const total = new DataView(this.buffer.buffer, this.buffer.byteOffset, 4).getUint32(0, false);
      if (total < MIN_FRAME || total > MAX_FRAME) return { frames, error: `frame length ${total} is out of range` };
      if (this.buffer.byteLength < total) break;
      let message: ReturnType<EventStreamCodec['decode']>;
      try {
        message = this.codec.decode(this.buffer.subarray(0, total));
      } catch (err) {
        return { frames, error: (err as Error).message };
      }
      this.buffer = this.buffer.subarray(total);
      const headers: Record<string, string> = {};
      for (const [name, header] of Object.entries(message.headers)) {
        if (header.type === 'string') headers[name] = header.value;
      }
      const body = message.body;
      frames.push({ messageType: headers[':message-type'] ?? 'event', headers, body, text: () => toUtf8(body) });
    }
    return { frames };
  }
}
