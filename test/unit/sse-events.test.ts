import { describe, expect, it } from 'vitest';
import { EventAligner, lastEventEnd } from '../../functions/shared/http/sse-events';
import { judgeFirstLine } from '../../functions/gateway/stream-check';

const b = (s: string) => Buffer.from(s);

describe('lastEventEnd: the end of the last whole SSE event in a read', () => {
  it.each([
    ['data: a\n\n', -1, -1, 9],
    ['data: a\r\n\r\n', -1, -1, 11],
    ['data: a\r\rdata: b', -1, -1, 9],
    ['data: a\n\ndata: b\n', -1, -1, 9],
    ['data: a\ndata: b\n', -1, -1, -1],
    ['data: a\r\ndata: b\r\n', -1, -1, -1],
    ['data: a', -1, -1, -1],
  ])('%j -> %i', (text, before1, before2, end) => {
    expect(lastEventEnd(b(text), before1, before2)).toBe(end);
  });

  it('finds a blank line split across reads (LF | LF, CRLF | CRLF, CR | LF CRLF)', () => {
    expect(lastEventEnd(b('\ndata: b'), 10, 97)).toBe(1);
    expect(lastEventEnd(b('\r\n'), 10, 13)).toBe(2);
    expect(lastEventEnd(b('\n'), 13, 10)).toBe(1);
    expect(lastEventEnd(b('\n\r\n'), 13, 97)).toBe(3);
    expect(lastEventEnd(b('\ndata'), 97, 97)).toBe(-1);
  });
});

describe('EventAligner', () => {
  it('returns a read that ends on an event boundary as it is (no copy)', () => {
    const events = new EventAligner();
    const chunk = b('data: 1\n\ndata: 2\n\n');
    expect(events.push(chunk)).toBe(chunk);
    expect(events.pendingBytes).toBe(0);
  });

  it('holds an event split across reads until its blank line, whatever the line ends', () => {
    for (const eol of ['\n', '\r\n', '\r']) {
      const text = `data: {"a":1}${eol}${eol}data: {"b":${eol}data: 2}${eol}${eol}: keep-alive${eol}${eol}`;
      const events = new EventAligner();
      let out = '';
      for (let i = 0; i < text.length; i += 3) out += events.push(b(text.slice(i, i + 3)))?.toString() ?? '';
      expect(events.rest()).toBeUndefined();
      expect(out).toBe(text);
    }
  });

  it('counts the bytes of an event that never ends, and gives them back at the end of input', () => {
    const events = new EventAligner();
    expect(events.push(b('data: 1\n\ndata: xx'))?.toString()).toBe('data: 1\n\n');
    expect(events.push(b('x'.repeat(1000)))).toBeUndefined();
    expect(events.pendingBytes).toBe(1008);
    expect(events.rest()?.toString()).toBe(`data: xx${'x'.repeat(1000)}`);
    expect(events.pendingBytes).toBe(0);
  });
});

describe('judgeFirstLine: is a streamed answer server-sent events?', () => {
  const MAX = 1024;
  it.each([
    ['data: {"id":"c"}\n\n', 'sse'],
    ['data:{"id":"c"}\n', 'sse'],
    ['data: [DONE]\n\n', 'sse'],
    [': keep-alive\n\n', 'sse'],
    ['event: message_start\ndata: {}\n\n', 'sse'],
    ['\ufeff\r\nid: 1\r\n', 'sse'],
    ['retry: 100\n', 'sse'],
    ['<html><body>502</body></html>', 'not-sse'],
    ['{"id": "chatcmpl", "choices": [', 'not-sse'],
    ['{"id"', 'more'],
    ['data: {"choices": [\n\n', 'not-sse'],
    ['data: <html>\n\n', 'not-sse'],
    ['\u001f\u008b\u0008\u0000\u0000\u0000', 'not-sse'],
    ['data: {"id":', 'more'],
    ['dat', 'more'],
    ['hello\n', 'not-sse'],
  ])('%j -> %s', (text, verdict) => {
    expect(judgeFirstLine(text, MAX)).toBe(verdict);
  });

  it('a first data line past the cap is too large, not waited for', () => {
    expect(judgeFirstLine(`data: {"padding":"${'a'.repeat(MAX)}`, MAX)).toBe('too-large');
  });
});
