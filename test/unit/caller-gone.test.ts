import { describe, expect, it } from 'vitest';
import { CallerLeftError, callerLeft, newRequestContext, outliveCaller } from '../../functions/shared/telemetry/context';

describe('the request context: the caller leaving', () => {
  it('aborts callerGone once, calling the listeners still attached, with the same reason as signal', () => {
    const ctx = newRequestContext('t');
    const gone = ctx.callerGone!;
    const calls: string[] = [];
    const kept = () => calls.push('kept');
    const removed = () => calls.push('removed');
    gone.addEventListener('abort', kept, { once: true });
    gone.addEventListener('abort', removed);
    gone.removeEventListener('abort', removed);
    const signal = ctx.signal!;
    expect(gone.aborted).toBe(false);
    callerLeft(ctx);
    callerLeft(ctx);
    expect(calls).toEqual(['kept']);
    expect(gone.aborted).toBe(true);
    expect(gone.reason).toBeInstanceOf(CallerLeftError);
    expect(signal.reason).toBe(gone.reason);
    // A listener added afterwards is not called: the client checks `aborted` first.
    gone.addEventListener('abort', () => calls.push('late'));
    expect(calls).toEqual(['kept']);
  });

  it('stays quiet for a request that outlives its caller', () => {
    const ctx = newRequestContext('t');
    outliveCaller(ctx);
    callerLeft(ctx);
    expect(ctx.callerGone!.aborted).toBe(false);
  });
});
