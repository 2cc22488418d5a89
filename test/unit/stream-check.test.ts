import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { checkEventStream } from '../../functions/gateway/stream-check';
import { upstreamError } from '../../functions/shared/errors';

const EVENTS = 'data: {"choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\ndata: {"choices":[{"index":0,"delta":{"content":"first words"}}]}\n\n';

/** Read a body to its end or its failure: the bytes that came out, then the error. */
async function drain(body: PassThrough): Promise<{ text: string; error?: Error }> {
  let text = '';
  try {
    for await (const chunk of body) text += String(chunk);
    return { text };
  } catch (error) {
    return { text, error: error as Error };
  }
}

describe('checkEventStream: a cut right after the first events', () => {
  it('in the same tick as the bytes: the check passes, and a reader gets the events, then the cut', async () => {
    const body = new PassThrough();
    const checked = checkEventStream(body, { 'content-type': 'text/event-stream' }, 'openai');
    body.write(EVENTS);
    body.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
    await expect(checked).resolves.toBeUndefined();
    const { text, error } = await drain(body);
    expect(text).toBe(EVENTS);
    expect(error?.message).toBe('aborted');
  });

  it('after the verdict, before anyone reads: the events are still read, then the cut (an EOF pushed after it is not a clean end)', async () => {
    const body = new PassThrough();
    const checked = checkEventStream(body, { 'content-type': 'text/event-stream' }, 'openai');
    body.write(EVENTS);
    await checked;
    body.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
    body.push(null);
    const { text, error } = await drain(body);
    expect(text).toBe(EVENTS);
    expect(error?.message).toBe('aborted');
  });

  it("the gateway's own failures (deadline, caller gone) still end the body at once", async () => {
    const body = new PassThrough();
    const checked = checkEventStream(body, { 'content-type': 'text/event-stream' }, 'openai');
    body.write(EVENTS);
    await checked;
    body.destroy(upstreamError('deadline', 'request_timeout'));
    expect(body.destroyed).toBe(true);
    const { text, error } = await drain(body);
    expect(text).toBe('');
    expect(error?.message).toBe('deadline');
  });

  it('a cut before any byte fails the check (the attempt fails: retries and fallbacks apply)', async () => {
    const body = new PassThrough();
    const checked = checkEventStream(body, { 'content-type': 'text/event-stream' }, 'openai');
    body.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
    await expect(checked).rejects.toMatchObject({ status: 502, code: 'upstream_response_ended' });
  });
});
