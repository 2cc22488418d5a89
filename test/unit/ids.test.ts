import { describe, expect, it } from 'vitest';
import { newId, timeOrderedId } from '../../functions/shared/ids';

const CROCKFORD = /^[0-9abcdefghjkmnpqrstvwxyz]{26}$/;

describe('time-ordered ids', () => {
  it('are 26 lowercase Crockford base32 characters, time first', () => {
    const id = timeOrderedId(Date.UTC(2026, 10, 22));
    expect(id).toMatch(CROCKFORD);
    expect(timeOrderedId(Date.UTC(2030, 0, 1)).slice(0, 10) > id.slice(0, 10)).toBe(true);
    expect(newId('log_')).toMatch(/^log_[0-9a-z]{26}$/);
  });

  it('sort in creation order and never repeat, within one millisecond and across many', () => {
    // Enough ids to draw the shared random pool dry several times.
    const ids: string[] = [];
    for (let ms = 0; ms < 2_000; ms++) {
      const now = 1_800_000_000_000 + Math.floor(ms / 4);
      ids.push(timeOrderedId(now));
    }
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('draw fresh randomness for every new millisecond', () => {
    const randomParts = new Set<string>();
    for (let i = 0; i < 500; i++) randomParts.add(timeOrderedId(1_900_000_000_000 + i).slice(10));
    expect(randomParts.size).toBe(500);
  });

  it('stay ordered when the clock steps back', () => {
    const later = timeOrderedId(2_000_000_000_000);
    const earlierClock = timeOrderedId(1_999_999_999_000);
    expect(earlierClock > later).toBe(true);
  });
});
