import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RequestMetrics } from '../../functions/shared/telemetry/metrics';

// The per-request log line and EMF document are built without Powertools' generic path
// (functions/shared/telemetry/logger.ts `infoLine`, metrics.ts `requestMetricsLine`). They
// must print exactly what Powertools prints for the same data under the same settings:
// Powertools itself is the oracle here (log.info, and a Metrics instance fed metric by
// metric the way the gateway used to). Only the clock readings may differ.

const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const ISO_OFFSET = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$/;

async function load(env: Record<string, string | undefined>) {
  vi.resetModules();
  for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
  const [logger, metrics, context, invocations, powertools] = await Promise.all([
    import('../../functions/shared/telemetry/logger'),
    import('../../functions/shared/telemetry/metrics'),
    import('../../functions/shared/telemetry/context'),
    import('../../functions/shared/telemetry/invocations'),
    import('@aws-lambda-powertools/metrics'),
  ]);
  const { Metrics, MetricUnit } = powertools;
  const oracleMetrics = new Metrics({ namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? 'AiGateway', serviceName: logger.SERVICE_NAME });
  /** What the gateway did before: eight addMetric calls and a publish, through Powertools. */
  function powertoolsMetrics(m: RequestMetrics, publish = true): void {
    oracleMetrics.addDimension('route', m.route);
    if (m.provider) oracleMetrics.addDimension('provider', m.provider);
    oracleMetrics.addMetric('Requests', MetricUnit.Count, 1);
    oracleMetrics.addMetric('Errors', MetricUnit.Count, m.status >= 500 ? 1 : 0);
    oracleMetrics.addMetric('ClientErrors', MetricUnit.Count, m.status >= 400 && m.status < 500 ? 1 : 0);
    oracleMetrics.addMetric('Latency', MetricUnit.Milliseconds, m.latencyMs);
    if (m.upstreamLatencyMs !== undefined) oracleMetrics.addMetric('UpstreamLatency', MetricUnit.Milliseconds, m.upstreamLatencyMs);
    if (m.promptTokens !== undefined) oracleMetrics.addMetric('PromptTokens', MetricUnit.Count, m.promptTokens);
    if (m.completionTokens !== undefined) oracleMetrics.addMetric('CompletionTokens', MetricUnit.Count, m.completionTokens);
    if (m.cacheHit !== undefined) oracleMetrics.addMetric('CacheHits', MetricUnit.Count, m.cacheHit ? 1 : 0);
    if (m.rateLimited) oracleMetrics.addMetric('RateLimitRejections', MetricUnit.Count, 1);
    if (m.guardrailBlocked) oracleMetrics.addMetric('GuardrailBlocks', MetricUnit.Count, 1);
    if (publish) oracleMetrics.publishStoredMetrics();
  }
  const ctx = { ...context.newRequestContext('trace-1'), workspaceId: 'ws-1' };
  return {
    invocations,
    metrics,
    /** Powertools' one document for many requests' metrics (a metric added again becomes an array of values). */
    oracleBatch: (ms: RequestMetrics[]) =>
      stdout(() => {
        for (const m of ms) powertoolsMetrics(m, false);
        oracleMetrics.publishStoredMetrics();
      }),
    lean: (fields: Record<string, unknown>, m: RequestMetrics) => stdout(() => metrics.writeRequestTelemetry('request', fields, m, ctx)),
    oracle: (fields: Record<string, unknown>, m: RequestMetrics) =>
      stdout(() => {
        logger.log.info('request', fields, ctx);
        powertoolsMetrics(m);
      }),
    writes: (fields: Record<string, unknown>, m: RequestMetrics) => {
      let count = 0;
      const spy = vi.spyOn(process.stdout, 'write').mockImplementation(() => ++count > 0);
      try {
        metrics.writeRequestTelemetry('request', fields, m, ctx);
      } finally {
        spy.mockRestore();
      }
      return count;
    },
  };
}

/** Everything written to stdout by `fn`, as its lines, with clock readings replaced. */
function stdout(fn: () => void): string[] {
  let text = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    text += String(chunk);
    return true;
  });
  try {
    fn();
  } finally {
    spy.mockRestore();
  }
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const parsed = JSON.parse(line) as { timestamp?: string; _aws?: { Timestamp: number } };
      if (parsed.timestamp !== undefined) {
        expect(parsed.timestamp).toMatch(process.env.TZ && !process.env.TZ.includes('UTC') ? ISO_OFFSET : ISO_UTC);
        parsed.timestamp = `(clock)${parsed.timestamp.endsWith('Z') ? 'Z' : parsed.timestamp.slice(-6)}`;
      }
      if (parsed._aws) {
        expect(Math.abs(parsed._aws.Timestamp - Date.now())).toBeLessThan(60_000);
        parsed._aws.Timestamp = 0;
      }
      return JSON.stringify(parsed);
    });
}

const FIELDS = {
  route: 'chat.completions',
  method: 'POST',
  path: '/v1/chat/completions',
  provider: null,
  model: 'gpt-4o-mini',
  status: 200,
  latency_ms: 12,
  upstream_latency_ms: 9,
  tokens: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 },
  cache_status: '',
  retry_count: 0,
  metadata: { team: 'search', empty: '' },
  stream: false,
};
const FULL: RequestMetrics = {
  route: 'chat.completions',
  provider: 'openai',
  status: 200,
  latencyMs: 12,
  upstreamLatencyMs: 9,
  promptTokens: 3,
  completionTokens: 5,
  cacheHit: false,
};
const REFUSED: RequestMetrics = { route: 'proxy', status: 429, latencyMs: 2, rateLimited: true, guardrailBlocked: true };
const FAILED: RequestMetrics = { route: 'embeddings', provider: 'cohere', status: 502, latencyMs: 40, cacheHit: true };

afterEach(() => {
  vi.unstubAllEnvs();
  vi.resetModules();
});

describe('request telemetry: the same lines as Powertools, in one write', () => {
  // The suite runs with POWERTOOLS_LOG_LEVEL=WARN and metrics off (vitest.config.ts), so
  // every case names both settings, and says how many lines each request must print.
  const ON = { POWERTOOLS_LOG_LEVEL: 'INFO', POWERTOOLS_METRICS_DISABLED: 'false' };
  it.each([
    ['log line and metrics (as on Lambda)', ON, 2],
    ['another service and namespace', { ...ON, POWERTOOLS_SERVICE_NAME: 'edge-gw', POWERTOOLS_METRICS_NAMESPACE: 'Edge' }, 2],
    [
      'a sampling rate and an X-Ray trace',
      { ...ON, POWERTOOLS_LOGGER_SAMPLE_RATE: '0.25', _X_AMZN_TRACE_ID: 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1' },
      2,
    ],
    ['a time zone other than UTC', { ...ON, TZ: 'America/New_York' }, 2],
    ["Lambda's UTC time zone", { ...ON, TZ: ':UTC' }, 2],
    ['DEBUG level', { ...ON, POWERTOOLS_LOG_LEVEL: 'DEBUG' }, 2],
    ['INFO not logged', { ...ON, POWERTOOLS_LOG_LEVEL: 'WARN' }, 1],
    ['metrics off', { ...ON, POWERTOOLS_METRICS_DISABLED: 'true' }, 1],
    ['nothing logged', { POWERTOOLS_LOG_LEVEL: 'ERROR', POWERTOOLS_METRICS_DISABLED: 'true' }, 0],
  ])('%s', async (_name, env, lines) => {
    const t = await load(env);
    for (const m of [FULL, REFUSED, FAILED]) {
      const expected = t.oracle(FIELDS, m);
      expect(expected).toHaveLength(lines);
      expect(t.lean(FIELDS, m)).toEqual(expected);
      expect(t.writes(FIELDS, m)).toBe(lines > 0 ? 1 : 0);
    }
  });

  it('dev mode turns metrics off unless asked for, as in Powertools', async () => {
    // (In dev mode Powertools prints through the global console, which vitest captures, so
    // it cannot be the oracle here; Metrics' own dev-mode rule decides for the lean path.)
    const t = await load({ POWERTOOLS_LOG_LEVEL: 'INFO', POWERTOOLS_METRICS_DISABLED: undefined, POWERTOOLS_DEV: 'true' });
    const lines = t.lean(FIELDS, FULL);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'INFO', message: 'request', route: 'chat.completions' });
  });

  it('leaves out the null, undefined and empty fields Powertools leaves out, and keeps nested ones', async () => {
    const t = await load({ POWERTOOLS_LOG_LEVEL: 'INFO', POWERTOOLS_METRICS_DISABLED: 'true' });
    const [line] = t.lean(FIELDS, FULL);
    const parsed = JSON.parse(line!) as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual([
      'level',
      'message',
      'timestamp',
      'service',
      'sampling_rate',
      'trace_id',
      'workspace_id',
      'route',
      'method',
      'path',
      'model',
      'status',
      'latency_ms',
      'upstream_latency_ms',
      'tokens',
      'retry_count',
      'metadata',
      'stream',
    ]);
    expect(parsed.metadata).toEqual({ team: 'search', empty: '' });
  });

  it('puts every metric under the route and provider dimensions', async () => {
    const t = await load({ POWERTOOLS_METRICS_DISABLED: 'false', POWERTOOLS_LOG_LEVEL: 'ERROR' });
    const [emf] = t
      .lean(FIELDS, FULL)
      .map(
        (l) => JSON.parse(l) as Record<string, unknown> & { _aws: { CloudWatchMetrics: Array<{ Dimensions: string[][]; Metrics: Array<{ Name: string }> }> } },
      );
    expect(emf!._aws.CloudWatchMetrics[0]!.Dimensions).toEqual([['service', 'route', 'provider']]);
    expect(emf!._aws.CloudWatchMetrics[0]!.Metrics.map((x) => x.Name)).toEqual([
      'Requests',
      'Errors',
      'ClientErrors',
      'Latency',
      'UpstreamLatency',
      'PromptTokens',
      'CompletionTokens',
      'CacheHits',
    ]);
    expect(emf).toMatchObject({ service: 'ai-gateway', route: 'chat.completions', provider: 'openai', Requests: 1, Latency: 12, CacheHits: 0 });
  });
});

describe('request metrics of a busy process (many invocations at once)', () => {
  const ON = { POWERTOOLS_LOG_LEVEL: 'ERROR', POWERTOOLS_METRICS_DISABLED: 'false' };
  const requests = (n: number): RequestMetrics[] =>
    Array.from({ length: n }, (_, i) => ({
      ...FULL,
      latencyMs: 10 + i,
      upstreamLatencyMs: 5 + i,
      promptTokens: i,
      completionTokens: 2 * i,
      cacheHit: i % 2 === 0,
    }));

  it('are held and written as one document of value arrays, the one Powertools writes for the same metrics added again and again', async () => {
    const t = await load(ON);
    t.invocations.invocationStarted();
    t.invocations.invocationStarted();
    const ms = requests(7);
    for (const m of ms) expect(t.lean(FIELDS, m)).toEqual([]);
    t.invocations.invocationEnded();
    // The last invocation to end writes what is held.
    const written = stdout(() => void t.invocations.invocationEnded());
    expect(written).toHaveLength(1);
    expect(written).toEqual(t.oracleBatch(ms));
    const doc = JSON.parse(written[0]!) as Record<string, unknown>;
    expect(doc.Requests).toEqual([1, 1, 1, 1, 1, 1, 1]);
    expect(doc.Latency).toEqual([10, 11, 12, 13, 14, 15, 16]);
  });

  it("keep documents of different dimensions apart, and write one as soon as a metric has 100 values (EMF's limit)", async () => {
    const t = await load(ON);
    t.invocations.invocationStarted();
    t.invocations.invocationStarted();
    const ms = requests(100);
    for (const m of ms.slice(0, 99)) expect(t.lean(FIELDS, m)).toEqual([]);
    expect(t.lean(FIELDS, FAILED)).toEqual([]);
    const full = t.lean(FIELDS, ms[99]!);
    expect(full).toHaveLength(1);
    const doc = JSON.parse(full[0]!) as Record<string, unknown>;
    expect(doc).toMatchObject({ route: 'chat.completions', provider: 'openai' });
    expect(doc.Requests).toEqual(ms.map(() => 1));
    expect(doc.Latency).toEqual(ms.map((m) => m.latencyMs));
    expect(doc.CacheHits).toEqual(ms.map((m) => (m.cacheHit ? 1 : 0)));
    const rest = stdout(() => void t.invocations.writeHeld());
    expect(rest).toHaveLength(1);
    expect(JSON.parse(rest[0]!)).toMatchObject({ route: 'embeddings', provider: 'cohere', Requests: 1, Errors: 1 });
  });

  it('are written within a second while the process stays busy', async () => {
    vi.useFakeTimers();
    try {
      const t = await load(ON);
      t.invocations.invocationStarted();
      t.invocations.invocationStarted();
      expect(t.lean(FIELDS, FULL)).toEqual([]);
      expect(stdout(() => vi.advanceTimersByTime(t.invocations.HOLD_MS - 1))).toEqual([]);
      const written = stdout(() => vi.advanceTimersByTime(1));
      expect(written).toHaveLength(1);
      expect(JSON.parse(written[0]!)).toMatchObject({ Requests: 1, Latency: 12 });
    } finally {
      vi.useRealTimers();
    }
  });

  it('are written at once by a process serving one invocation (Lambda on demand)', async () => {
    const t = await load(ON);
    t.invocations.invocationStarted();
    expect(t.lean(FIELDS, FULL)).toHaveLength(1);
    expect(stdout(() => void t.invocations.invocationEnded())).toEqual([]);
  });
});

describe('request log lines of a busy process', () => {
  const LINES_ON = { POWERTOOLS_LOG_LEVEL: 'INFO', POWERTOOLS_METRICS_DISABLED: 'true' };
  const latencies = (lines: string[]) => lines.map((l) => (JSON.parse(l) as { latency_ms: number }).latency_ms);

  it('are held and written in one write, in order, by the invocation that leaves the process idle', async () => {
    const t = await load(LINES_ON);
    t.invocations.invocationStarted();
    t.invocations.invocationStarted();
    for (const latency of [1, 2, 3]) expect(t.lean({ ...FIELDS, latency_ms: latency }, FULL)).toEqual([]);
    expect(stdout(() => void t.invocations.invocationEnded())).toEqual([]);
    let writes = 0;
    const written = stdout(() => {
      const spy = vi.spyOn(process.stdout, 'write');
      void t.invocations.invocationEnded();
      writes = spy.mock.calls.length;
    });
    expect(writes).toBe(1);
    expect(latencies(written)).toEqual([1, 2, 3]);
    expect(JSON.parse(written[0]!)).toMatchObject({ level: 'INFO', message: 'request', trace_id: 'trace-1' });
  });

  it('are written within LINE_HOLD_MS while the process stays busy, and before a later line written at once', async () => {
    vi.useFakeTimers();
    try {
      const t = await load(LINES_ON);
      t.invocations.invocationStarted();
      t.invocations.invocationStarted();
      expect(t.lean({ ...FIELDS, latency_ms: 1 }, FULL)).toEqual([]);
      expect(stdout(() => vi.advanceTimersByTime(t.metrics.LINE_HOLD_MS - 1))).toEqual([]);
      expect(latencies(stdout(() => vi.advanceTimersByTime(1)))).toEqual([1]);

      expect(t.lean({ ...FIELDS, latency_ms: 2 }, FULL)).toEqual([]);
      t.invocations.invocationEnded();
      // One invocation left: its line goes at once, after the one still held.
      expect(latencies(t.lean({ ...FIELDS, latency_ms: 3 }, FULL))).toEqual([2, 3]);
      expect(stdout(() => vi.advanceTimersByTime(t.metrics.LINE_HOLD_MS))).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('an event metric (publishMetric)', () => {
  it('is one EMF document under every dimension set given, written at once even in a busy process', async () => {
    const t = await load({ POWERTOOLS_METRICS_DISABLED: 'false' });
    const emf = await import('../../functions/shared/telemetry/emf');
    t.invocations.invocationStarted();
    t.invocations.invocationStarted();
    const written = stdout(() =>
      emf.publishMetric('BudgetThresholdCrossed', 'Count', 1, [['service', 'workspace', 'budget'], ['service']], { workspace: 'ws-1', budget: 'bud_1' }),
    );
    expect(written.map((l) => JSON.parse(l))).toEqual([
      {
        _aws: {
          Timestamp: 0,
          CloudWatchMetrics: [
            {
              Namespace: 'AiGateway',
              Dimensions: [['service', 'workspace', 'budget'], ['service']],
              Metrics: [{ Name: 'BudgetThresholdCrossed', Unit: 'Count' }],
            },
          ],
        },
        service: 'ai-gateway',
        workspace: 'ws-1',
        budget: 'bud_1',
        BudgetThresholdCrossed: 1,
      },
    ]);
  });
});
