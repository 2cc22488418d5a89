import { describe, expect, it } from 'vitest';
import { gatewayRunLineCost, nativeLineCost, type BatchLineInputs } from '../../infra/cost/batch';
import { frontDoorItems, growthItems, MEASURED_PROFILE, REALISTIC_PROFILE, recordWriteUnits, type GrowthContext } from '../../infra/cost/growth';
import { managedInstancesCost, onDemandCost, type ManagedInstancesSettings, type MeasuredInputs } from '../../infra/cost/model';
import { scaleRows } from '../../infra/cost/scale';

// Hand-computed expectations, the arithmetic beside each figure. 100 req/s is 262.8 M requests a month.
const item = (items: Array<{ name: string; usdPerMillion: number }>, name: string) => items.find((i) => i.name === name)!.usdPerMillion;
const MONTHLY_M_AT_100 = 262.8;

const measured: MeasuredInputs = {
  cpuMsPerRequest: 1,
  alone: { writeUnitsPerRequest: 2, readUnitsPerRequest: 0.5, logBytesPerRequest: 1500, heldWriteUnitsPerSecond: 0, heldLogBytesPerSecond: 0 },
  busy: {
    requestsPerSecond: 25,
    writeUnitsPerRequest: 1,
    readUnitsPerRequest: 0.5,
    logBytesPerRequest: 500,
    heldWriteUnitsPerSecond: 5,
    heldLogBytesPerSecond: 2000,
  },
  providerBytesPerRequest: 2500,
  customMetrics: 20,
};
const managed: ManagedInstancesSettings = {
  instanceTypes: ['c7g.large', 'c7g.xlarge'],
  memoryMb: 2048,
  memoryGiBPerVCpu: 2,
  perExecutionEnvironmentMaxConcurrency: 64,
  minExecutionEnvironments: 3,
  cpuTargetUtilization: 0.5,
  natGateways: 1,
};
const context = (over: Partial<GrowthContext> = {}): GrowthContext => ({
  mode: 'on-demand',
  frontDoor: 'api-gateway',
  requestsPerSecond: 100,
  environments: 4,
  requestSeconds: 2,
  natGateways: 1,
  measuredCustomMetrics: 20,
  credentialCacheSeconds: 30,
  accessLogBytes: 500,
  ...over,
});

describe('front door rows', () => {
  it('API Gateway REST $3.50, a function URL nothing, CloudFront + WAF requests and the web ACL month spread over the traffic', () => {
    expect(frontDoorItems('api-gateway', 100).map((i) => i.usdPerMillion)).toEqual([3.5]);
    expect(frontDoorItems('function-url', 100).map((i) => i.usdPerMillion)).toEqual([0]);
    const cdn = frontDoorItems('cloudfront', 100);
    expect(item(cdn, 'CloudFront requests')).toBe(1);
    expect(item(cdn, 'WAF requests')).toBe(0.6);
    // $5 web ACL + 2 rules × $1 a month over 262.8 M requests.
    expect(item(cdn, 'WAF web ACL and rules')).toBeCloseTo(7 / MONTHLY_M_AT_100, 10);
  });

  it('swaps the front door line of both modes, everything else equal', () => {
    const t = { providerLatencyS: 2, requestsPerSecond: 100 };
    const od = onDemandCost(measured, t, { memoryMb: 1024, platformLogBytesPerInvoke: 500 });
    const odUrl = onDemandCost(measured, t, { memoryMb: 1024, platformLogBytesPerInvoke: 500, frontDoor: 'function-url' });
    expect(od.usdPerMillion - odUrl.usdPerMillion).toBeCloseTo(3.5, 10);
    const mi = managedInstancesCost(measured, t, managed);
    const miCdn = managedInstancesCost(measured, t, { ...managed, frontDoor: 'cloudfront' });
    expect(miCdn.usdPerMillion - mi.usdPerMillion).toBeCloseTo(1 + 0.6 + 7 / MONTHLY_M_AT_100 - 3.5, 10);
    expect(miCdn.items.map((i) => i.name).slice(0, 4)).toEqual(['CloudFront requests', 'WAF requests', 'WAF web ACL and rules', 'Lambda requests']);
  });
});

describe('what grows', () => {
  it('prices a realistic request on demand behind API Gateway, item by item', () => {
    const g = growthItems(REALISTIC_PROFILE, context());
    // 2 KB record: 2 WRU instead of 1; 4 index writes of 2 WRU; at $0.625 per million WRU.
    expect(item(g, 'Record size')).toBeCloseTo(0.625, 10);
    expect(item(g, 'Metadata index writes')).toBeCloseTo(8 * 0.625, 10);
    expect(item(g, 'Extra spend counters')).toBeCloseTo(2 * 0.625, 10);
    expect(item(g, 'Budget charges')).toBeCloseTo(0.625, 10);
    expect(item(g, 'Tokens policies')).toBeCloseTo(2 * 0.625, 10);
    // 100 req/s × 86,400 s × 30 days × 2 KB × (table + 4 indexes) = 2,654 GB kept.
    const gb = (100 * 86_400 * 30 * 2 * 1024 * 5) / 1e9;
    expect(item(g, 'DynamoDB storage (request logs)')).toBeCloseTo((gb * 0.25) / MONTHLY_M_AT_100, 8);
    expect(item(g, 'Point-in-time recovery')).toBeCloseTo((gb * 0.2) / MONTHLY_M_AT_100, 8);
    // 100 req/s × 2 s = 200 environments, each decrypting once per 30 s: 6.67/s of 100 req/s at $3/M.
    expect(item(g, 'KMS requests')).toBeCloseTo((200 / 30 / 100) * 3, 10);
    // 1 + 5 % of 99 = 5.95 traces a second of 100 requests, at $5/M.
    expect(item(g, 'X-Ray traces')).toBeCloseTo((5.95 / 100) * 5, 10);
    expect(item(g, 'API access logs')).toBeCloseTo((500 * 1e6 * 0.5) / 1e9, 10);
    // 300 SSE events of 230 B = 69,000 B at $0.09/GB.
    expect(item(g, 'Answer bytes out')).toBeCloseTo((69_000 * 1e6 * 0.09) / 1e9, 10);
    expect(item(g, 'NAT data (streamed answer)')).toBe(0);
    expect(item(g, 'Custom metrics (cardinality)')).toBeCloseTo((180 * 0.3) / MONTHLY_M_AT_100, 10);
  });

  it('on Managed Instances counters are written once a second per environment, and the streamed answer crosses NAT', () => {
    const g = growthItems(REALISTIC_PROFILE, context({ mode: 'managed-instances', frontDoor: 'function-url' }));
    // 2 counters × 4 environments a second over 100 requests a second.
    expect(item(g, 'Extra spend counters')).toBeCloseTo(0.08 * 0.625, 10);
    expect(item(g, 'Tokens policies')).toBeCloseTo(0.08 * 0.625, 10);
    expect(item(g, 'KMS requests')).toBeCloseTo((4 / 30 / 100) * 3, 10);
    expect(item(g, 'API access logs')).toBe(0);
    expect(item(g, 'NAT data (streamed answer)')).toBeCloseTo((78_500 * 1e6 * 0.045) / 1e9, 10);
    // Behind CloudFront the answer leaves at CloudFront's rate.
    const cdn = growthItems(REALISTIC_PROFILE, context({ mode: 'managed-instances', frontDoor: 'cloudfront' }));
    expect(item(cdn, 'Answer bytes out')).toBeCloseTo((69_000 * 1e6 * 0.085) / 1e9, 10);
  });

  it('the measured request adds nothing but storage, traces, KMS, its access log and its answer bytes', () => {
    const g = growthItems(MEASURED_PROFILE, context());
    for (const name of ['Record size', 'Metadata index writes', 'Extra spend counters', 'Budget charges', 'Tokens policies', 'Custom metrics (cardinality)']) {
      expect(item(g, name), name).toBe(0);
    }
  });

  it('a record costs a write unit per started KB in the table and in each metadata index', () => {
    expect(recordWriteUnits(1, 0)).toBe(1);
    expect(recordWriteUnits(2, 4)).toBe(10);
    expect(recordWriteUnits(8, 0)).toBe(8);
    expect(recordWriteUnits(1.2, 1)).toBe(4);
  });
});

describe('scale table', () => {
  const rows = scaleRows(measured, {
    providerLatencyS: 2,
    onDemand: { memoryMb: 1024, platformLogBytesPerInvoke: 500 },
    managed: { ...managed, frontDoor: 'function-url' },
    maxVCpuCount: 64,
    recordKb: 1,
    credentialCacheSeconds: 30,
  });
  const binds = (rps: number) =>
    rows
      .find((r) => r.requestsPerSecond === rps)!
      .quotas.filter((q) => q.binds)
      .map((q) => q.quota);

  it('names the quota each rate runs into', () => {
    expect(rows.map((r) => r.requestsPerSecond)).toEqual([10, 100, 1000, 10_000]);
    expect(binds(10)).toEqual([]);
    expect(binds(100)).toEqual([]);
    // 1,000 req/s × 2.001 s = 2,001 environments on demand; 1,000 WCU on one key is the limit, not past it.
    expect(binds(1000)).toEqual(['Lambda concurrency (on demand)']);
    expect(binds(10_000)).toEqual([
      'Lambda concurrency (on demand)',
      'Managed Instances vCPUs',
      'API Gateway stage throttle',
      'DynamoDB partition (request-log key, unsharded)',
    ]);
  });

  it('counts the fleet in vCPUs: 1,000 req/s of 2 s requests fit under 64, 10,000 do not', () => {
    const r = rows.find((x) => x.requestsPerSecond === 1000)!;
    // 2,001 in flight / 64 = 32 environments; a c7g.xlarge keeps 3 of its 4 vCPUs for them: 11 instances, 44 vCPUs.
    expect(r.managedInstances).toMatchObject({ environments: 32, instanceType: 'c7g.xlarge', instances: 11, vcpus: 44 });
    expect(r.hottestKeyWcu).toBe(1000);
    // 20,010 in flight: 313 environments, 105 instances, 420 vCPUs.
    expect(rows.find((x) => x.requestsPerSecond === 10_000)!.managedInstances).toMatchObject({ environments: 313, instances: 105, vcpus: 420 });
  });
});

describe('a batch line', () => {
  const line: BatchLineInputs = {
    tokensUsd: 0.00033,
    nativeDiscount: 0.5,
    providerLatencyS: 2,
    workerMemoryMb: 1024,
    linesInFlight: 8,
    linesPerChunk: 100,
    gatewayWriteUnitsPerLine: 6,
    lineBytes: 4000,
    fileDays: 30,
    linesPerBatch: 1000,
    nativeTransitionsPerBatch: 300,
    nativeWriteUnitsPerLine: 1,
  };

  it('run by the gateway: list-price tokens plus the worker, the writes and the files', () => {
    const c = gatewayRunLineCost(line);
    expect(
      item(
        c.items.map((i) => ({ name: i.name, usdPerMillion: i.usdPerMillionLines })),
        'Provider tokens',
      ),
    ).toBeCloseTo(330, 8);
    // 2 s × 1 GB / 8 lines in flight = 0.25 GB-s a line.
    expect(c.items.find((i) => i.name === 'Worker duration')!.usdPerMillionLines).toBeCloseTo(0.25 * 1e6 * 0.0000133334, 6);
    expect(c.items.find((i) => i.name === 'DynamoDB writes')!.usdPerMillionLines).toBeCloseTo(6 * 0.625, 10);
  });

  it('native: half the tokens plus the polls spread over the batch; cheaper whenever tokens dominate', () => {
    const n = nativeLineCost(line);
    expect(n.items.find((i) => i.name === 'Provider tokens')!.usdPerMillionLines).toBeCloseTo(165, 8);
    // 300 transitions × $0.025 per 1,000 over 1,000 lines.
    expect(n.items.find((i) => i.name === 'Step Functions (submit, poll, collect)')!.usdPerMillionLines).toBeCloseTo(7.5, 8);
    expect(n.usdPerMillionLines).toBeLessThan(gatewayRunLineCost(line).usdPerMillionLines);
    // A one-line batch pays the whole execution.
    expect(nativeLineCost({ ...line, linesPerBatch: 1 }).items.find((i) => i.name.startsWith('Step'))!.usdPerMillionLines).toBeCloseTo(7500, 6);
  });
});
