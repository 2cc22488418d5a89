import { beforeEach, describe, expect, it } from 'vitest';
import { addInFlight, forgetKnownCounters, knownCountSince, learnCount, whileAdding } from '../../functions/policies/known-counters';

/** The per-container memory behind the budget and tokens read-ahead (functions/policies/known-counters.ts). */
describe('known counters', () => {
  beforeEach(() => forgetKnownCounters());

  it('is known only from the given time on', () => {
    learnCount('a', 5, 1_000);
    expect(knownCountSince('a', 1_000)).toBe(5);
    expect(knownCountSince('a', 500)).toBe(5);
    expect(knownCountSince('a', 1_001)).toBeUndefined();
    expect(knownCountSince('b', 0)).toBeUndefined();
  });

  it('keeps the largest value and the latest time: answers that arrive out of order never lower it', () => {
    learnCount('a', 7, 2_000);
    // An older, smaller answer (a read sent earlier, answered later) changes nothing.
    learnCount('a', 4, 1_500);
    expect(knownCountSince('a', 2_000)).toBe(7);
    // A larger total whose call was sent earlier: spend only grows, so it is the later truth.
    learnCount('a', 9, 1_800);
    expect(knownCountSince('a', 2_000)).toBe(9);
    expect(knownCountSince('a', 2_001)).toBeUndefined();
  });

  it('counts the increments of this container to the counter still in flight on top of what it learned (which may miss them)', async () => {
    learnCount('a', 5, 1_000);
    const answers: Array<(total: number) => void> = [];
    const first = whileAdding('a', 3, () => new Promise<number>((resolve) => answers.push(resolve)));
    const second = whileAdding('a', 2, () => new Promise<number>((resolve) => answers.push(resolve)));
    expect(knownCountSince('a', 0)).toBe(10);
    expect(knownCountSince('b', 0)).toBeUndefined();
    answers[0]!(8);
    expect(await first).toBe(8);
    expect(knownCountSince('a', 0)).toBe(7);
    answers[1]!(10);
    await second;
    expect(knownCountSince('a', 0)).toBe(5);
    // A failed increment ends its flight too; nothing known stays nothing known.
    await expect(whileAdding('a', 4, () => Promise.reject(new Error('storage unavailable')))).rejects.toThrow('storage unavailable');
    expect(knownCountSince('a', 0)).toBe(5);
    void whileAdding('z', 1, () => new Promise(() => {}));
    expect(knownCountSince('z', 0)).toBeUndefined();
  });

  it('counts held increments added and settled apart (summed by a writer that sends them together), and never less than nothing in flight', () => {
    learnCount('t', 100, 1_000);
    addInFlight('t', 30);
    addInFlight('t', 20);
    expect(knownCountSince('t', 0)).toBe(150);
    // The writer sent both as one increment of 50, and it was answered.
    addInFlight('t', -50);
    expect(knownCountSince('t', 0)).toBe(100);
    addInFlight('t', -10);
    addInFlight('t', 5);
    expect(knownCountSince('t', 0)).toBe(105);
  });

  it('holds at most 10,000 counters, forgetting the least recently learned first', () => {
    for (let i = 0; i < 10_001; i++) learnCount(`c${i}`, i, 1);
    expect(knownCountSince('c0', 0)).toBeUndefined();
    expect(knownCountSince('c1', 0)).toBe(1);
    learnCount('c1', 1, 2);
    learnCount('d', 0, 2);
    expect(knownCountSince('c1', 0)).toBe(1);
    expect(knownCountSince('c2', 0)).toBeUndefined();
  });
});
