/** Pure helpers of the open-harness figures (bench/lib/open-harness.ts). */

/** Least-squares line through (x, y) points: y = intercept + slope x. */
export function linearRegression(xs: readonly number[], ys: readonly number[]): { slope: number; intercept: number } {
  const n = Math.min(xs.length, ys.length);
  if (n === 0) return { slope: Number.NaN, intercept: Number.NaN };
  let sx = 0;
  let sy = 0;
  for (let i = 0; i < n; i++) {
    sx += xs[i]!;
    sy += ys[i]!;
  }
  const mx = sx / n;
  const my = sy / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i]! - mx) * (ys[i]! - my);
    sxx += (xs[i]! - mx) ** 2;
  }
  const slope = sxx === 0 ? 0 : sxy / sxx;
  return { slope, intercept: my - slope * mx };
}

export interface Probe<T> {
  rate: number;
  pass: boolean;
  detail: T;
}

/**
 * The highest rate at which `probe` passes: from `start`, multiply by `factor` until a rate
 * fails (or `max` passes), then bisect between the last pass and the first failure
 * `refinements` times (between 0 and `start` when `start` fails). Rates are whole numbers;
 * 0 when nothing tried passed.
 */
export async function highestPassingRate<T>(
  probe: (rate: number) => Promise<{ pass: boolean; detail: T }>,
  opts: { start: number; factor: number; max: number; refinements: number },
): Promise<{ rate: number; probes: Array<Probe<T>> }> {
  const probes: Array<Probe<T>> = [];
  const tryRate = async (rate: number) => {
    const r = await probe(rate);
    probes.push({ rate, ...r });
    return r.pass;
  };
  let pass = 0;
  let fail = 0;
  for (let rate = opts.start; ; rate = Math.min(opts.max, Math.round(rate * opts.factor))) {
    if (!(await tryRate(rate))) {
      fail = rate;
      break;
    }
    pass = rate;
    if (rate >= opts.max) return { rate: pass, probes };
  }
  for (let i = 0; i < opts.refinements && fail - pass > 1; i++) {
    const mid = Math.round((pass + fail) / 2);
    if (await tryRate(mid)) pass = mid;
    else fail = mid;
  }
  return { rate: pass, probes };
}

/** Memory over a soak: the median after warm-up (plateau) and its growth by linear regression. */
export function soakFigures(
  samples: ReadonlyArray<{ seconds: number; mb: number }>,
  warmupS: number,
): { plateauMb: number; growthMbPerMin: number; samplesAfterWarmup: number } {
  const after = samples.filter((s) => s.seconds >= warmupS);
  if (after.length === 0) return { plateauMb: Number.NaN, growthMbPerMin: Number.NaN, samplesAfterWarmup: 0 };
  const sorted = after.map((s) => s.mb).sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const plateauMb = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  const { slope } = linearRegression(
    after.map((s) => s.seconds / 60),
    after.map((s) => s.mb),
  );
  return { plateauMb, growthMbPerMin: after.length < 2 ? Number.NaN : slope, samplesAfterWarmup: after.length };
}

/**
 * Gaps between consecutive events of one stream (ms), from each event's arrival time;
 * events that arrived in the same read have a gap of 0.
 */
export function interEventGaps(arrivals: readonly number[]): number[] {
  const gaps: number[] = [];
  for (let i = 1; i < arrivals.length; i++) gaps.push(arrivals[i]! - arrivals[i - 1]!);
  return gaps;
}
