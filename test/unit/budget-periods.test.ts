import { describe, expect, it } from 'vitest';
import { periodOf } from '../../functions/policies/budget-check';

const at = (iso: string) => Date.parse(iso);

describe('budget periods (UTC)', () => {
  it('a day runs from UTC midnight to the next', () => {
    expect(periodOf('day', at('2026-11-25T23:59:59.999Z'))).toEqual({ key: `day#${at('2026-11-25T00:00:00Z')}`, endsAt: at('2026-11-26T00:00:00Z') });
  });

  it('a week starts on Monday 00:00 UTC (ISO weeks), Sundays included in the week before', () => {
    // 2026-11-25 is a Wednesday; 2026-11-29 a Sunday; 2026-11-30 a Monday.
    const week = { key: `week#${at('2026-11-23T00:00:00Z')}`, endsAt: at('2026-11-30T00:00:00Z') };
    expect(periodOf('week', at('2026-11-25T12:00:00Z'))).toEqual(week);
    expect(periodOf('week', at('2026-11-29T23:00:00Z'))).toEqual(week);
    expect(periodOf('week', at('2026-11-23T00:00:00Z'))).toEqual(week);
    expect(periodOf('week', at('2026-11-30T00:00:00Z')).key).toBe(`week#${at('2026-11-30T00:00:00Z')}`);
  });

  it('a month is the calendar month, across year ends and leap days', () => {
    expect(periodOf('month', at('2026-12-31T23:00:00Z'))).toEqual({ key: `month#${at('2026-12-01T00:00:00Z')}`, endsAt: at('2027-01-01T00:00:00Z') });
    expect(periodOf('month', at('2028-02-29T10:00:00Z')).endsAt).toBe(at('2028-03-01T00:00:00Z'));
  });

  it('total never resets', () => {
    expect(periodOf('total', at('2026-11-25T00:00:00Z'))).toEqual({ key: 'total' });
  });
});
