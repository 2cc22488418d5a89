import { beforeEach, describe, expect, it } from 'vitest';
import { forgetKnownSpend, knownSpendSince, learnSpend, whileCharging } from '../../functions/policies/known-spend';

/** The per-container memory behind the budget read-ahead (functions/policies/known-spend.ts). */
describe('known spend', () => {
  beforeEach(() => forgetKnownSpend());

  it('is known only from the given time on', () => {
    learnSpend('a', 5, 1_000);
    expect(knownSpendSince('a', 1_000)).toBe(5);
    expect(knownSpendSince('a', 500)).toBe(5);
    expect(knownSpendSince('a', 1_001)).toBeUndefined();
    expect(knownSpendSince('b', 0)).toBeUndefined();
  });

  it('keeps the largest spend and the latest time: answers that arrive out of order never lower it', () => {
    learnSpend('a', 7, 2_000);
    // An older, smaller answer (a read sent earlier, answered later) changes nothing.
    learnSpend('a', 4, 1_500);
    expect(knownSpendSince('a', 2_000)).toBe(7);
    // A larger total whose call was sent earlier: spend only grows, so it is the later truth.
    learnSpend('a', 9, 1_800);
    expect(knownSpendSince('a', 2_000)).toBe(9);
    expect(knownSpendSince('a', 2_001)).toBeUndefined();
  });

  it('counts the charges of this container to the counter still in flight on top of what it learned (which may miss them)', async () => {
    learnSpend('a', 5, 1_000);
    const answers: Array<(total: number) => void> = [];
    const first = whileCharging('a', 3, () => new Promise<number>((resolve) => answers.push(resolve)));
    const second = whileCharging('a', 2, () => new Promise<number>((resolve) => answers.push(resolve)));
    expect(knownSpendSince('a', 0)).toBe(10);
    expect(knownSpendSince('b', 0)).toBeUndefined();
    answers[0]!(8);
    expect(await first).toBe(8);
    expect(knownSpendSince('a', 0)).toBe(7);
    answers[1]!(10);
    await second;
    expect(knownSpendSince('a', 0)).toBe(5);
    // A failed charge ends its flight too; nothing known stays nothing known.
    await expect(whileCharging('a', 4, () => Promise.reject(new Error('storage unavailable')))).rejects.toThrow('storage unavailable');
    expect(knownSpendSince('a', 0)).toBe(5);
    void whileCharging('z', 1, () => new Promise(() => {}));
    expect(knownSpendSince('z', 0)).toBeUndefined();
  });

  it('holds at most 10,000 counters, forgetting the least recently learned first', () => {
    for (let i = 0; i < 10_001; i++) learnSpend(`c${i}`, i, 1);
    expect(knownSpendSince('c0', 0)).toBeUndefined();
    expect(knownSpendSince('c1', 0)).toBe(1);
    learnSpend('c1', 1, 2);
    learnSpend('d', 0, 2);
    expect(knownSpendSince('c1', 0)).toBe(1);
    expect(knownSpendSince('c2', 0)).toBeUndefined();
  });
});
