import { describe, expect, it } from 'vitest';
import { highestPassingRate, interEventGaps, linearRegression, soakFigures } from '../../bench/lib/harness-math';

describe('linear regression (memory growth over a soak)', () => {
  it('recovers the slope and intercept of points on a line', () => {
    const r = linearRegression([0, 1, 2, 3], [10, 12, 14, 16]);
    expect(r.slope).toBeCloseTo(2, 10);
    expect(r.intercept).toBeCloseTo(10, 10);
  });

  it('fits noisy points by least squares, and a flat series has no slope', () => {
    expect(linearRegression([0, 1, 2, 3], [1, 3, 2, 4]).slope).toBeCloseTo(0.8, 10);
    expect(linearRegression([0, 1, 2], [5, 5, 5]).slope).toBe(0);
    expect(linearRegression([2, 2], [1, 3]).slope).toBe(0);
  });
});

describe('soak figures', () => {
  it('takes the plateau and the growth per minute from the samples after warm-up only', () => {
    // Warm-up climbs from 50 to 90 MB; afterwards 100 MB growing 0.5 MB per 10 s sample = 3 MB/min.
    const samples = [
      ...[0, 10, 20].map((s, i) => ({ seconds: s, mb: 50 + i * 20 })),
      ...[30, 40, 50, 60, 70].map((s, i) => ({ seconds: s, mb: 100 + i * 0.5 })),
    ];
    const f = soakFigures(samples, 30);
    expect(f.samplesAfterWarmup).toBe(5);
    expect(f.plateauMb).toBe(101);
    expect(f.growthMbPerMin).toBeCloseTo(3, 10);
  });

  it('has no figures without samples after warm-up', () => {
    expect(soakFigures([{ seconds: 0, mb: 1 }], 10).plateauMb).toBeNaN();
  });
});

describe('the highest rate within a p99 bound', () => {
  const upTo = (limit: number) => {
    const tried: number[] = [];
    const probe = async (rate: number) => {
      tried.push(rate);
      return { pass: rate <= limit, detail: rate };
    };
    return { tried, probe };
  };

  it('doubles until a rate fails, then bisects between the last pass and the failure', async () => {
    const { tried, probe } = upTo(1000);
    const r = await highestPassingRate(probe, { start: 100, factor: 2, max: 100_000, refinements: 3 });
    // 100..800 pass, 1600 fails; then 1200 (fail), 1000 (pass), 1100 (fail).
    expect(tried).toEqual([100, 200, 400, 800, 1600, 1200, 1000, 1100]);
    expect(r.rate).toBe(1000);
    expect(r.probes.map((p) => p.pass)).toEqual([true, true, true, true, false, false, true, false]);
  });

  it('stops at the maximum when every rate passes', async () => {
    const { tried, probe } = upTo(Number.POSITIVE_INFINITY);
    const r = await highestPassingRate(probe, { start: 100, factor: 2, max: 500, refinements: 3 });
    expect(tried).toEqual([100, 200, 400, 500]);
    expect(r.rate).toBe(500);
  });

  it('bisects below the first rate when it fails, and is 0 when nothing passes', async () => {
    const { tried, probe } = upTo(60);
    const r = await highestPassingRate(probe, { start: 100, factor: 2, max: 500, refinements: 2 });
    expect(tried).toEqual([100, 50, 75]);
    expect(r.rate).toBe(50);
    const none = upTo(0);
    expect((await highestPassingRate(none.probe, { start: 100, factor: 2, max: 500, refinements: 3 })).rate).toBe(0);
  });
});

describe('inter-event gaps', () => {
  it('are the differences between consecutive arrivals; events of one read have a gap of 0', () => {
    expect(interEventGaps([5, 15, 15, 26])).toEqual([10, 0, 11]);
    expect(interEventGaps([5])).toEqual([]);
  });
});
