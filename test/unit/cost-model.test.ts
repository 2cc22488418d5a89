import { describe, expect, it } from 'vitest';
import {
  assistantRunsCost,
  breakEvenRps,
  hoursPerMillion,
  managedInstancesCost,
  managedInstancesFleet,
  onDemandCost,
  perRequestAt,
  processingMs,
  rightSizeMemory,
  type ManagedInstancesSettings,
  type MeasuredInputs,
  type OnDemandSettings,
} from '../../infra/cost/model';
import { PRICES } from '../../infra/cost/prices';

// Hand-computed expectations (the arithmetic is written out beside each figure).
const measured: MeasuredInputs = {
  cpuMsPerRequest: 1,
  alone: { writeUnitsPerRequest: 2, readUnitsPerRequest: 0.5, logBytesPerRequest: 1500, heldWriteUnitsPerSecond: 0, heldLogBytesPerSecond: 0 },
  // Each request writes 1 WRU and 500 B itself; the process adds 5 WRU and 2,000 B a second for all of them.
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
const onDemand: OnDemandSettings = { memoryMb: 1024, platformLogBytesPerInvoke: 500 };
const managed: ManagedInstancesSettings = {
  instanceTypes: ['c7g.large', 'c7g.xlarge'],
  memoryMb: 2048,
  memoryGiBPerVCpu: 2,
  perExecutionEnvironmentMaxConcurrency: 64,
  minExecutionEnvironments: 3,
  cpuTargetUtilization: 0.5,
  natGateways: 1,
};
const item = (cost: { items: Array<{ name: string; usdPerMillion: number }> }, name: string) => cost.items.find((i) => i.name === name)!.usdPerMillion;

describe('cost model', () => {
  it('scales processing time with memory below one full vCPU only', () => {
    expect(processingMs(1, 1769)).toBe(1);
    expect(processingMs(1, 3538)).toBe(1);
    expect(processingMs(2, 512)).toBeCloseTo((2 * 1769) / 512, 10);
  });

  it('itemises on demand: API Gateway, requests, GB-seconds, DynamoDB units, log bytes, metrics', () => {
    const c = onDemandCost(measured, { providerLatencyS: 2, requestsPerSecond: 100 }, onDemand);
    // 2 s + 1 ms × 1769/1024 at 1 GB.
    expect(c.billedSeconds).toBeCloseTo(2 + 1.769 / 1024, 10);
    expect(item(c, 'Lambda duration')).toBeCloseTo((2 + 1.769 / 1024) * 1_000_000 * 0.0000133334, 6);
    expect(item(c, 'API Gateway (REST)')).toBe(3.5);
    expect(item(c, 'Lambda requests')).toBe(0.2);
    expect(item(c, 'DynamoDB writes')).toBeCloseTo(2 * 0.625, 10);
    expect(item(c, 'DynamoDB reads')).toBeCloseTo(0.5 * 0.125, 10);
    // (1500 + 500) B × 1e6 = 2 GB at $0.50.
    expect(item(c, 'CloudWatch Logs')).toBeCloseTo(1, 10);
    // 20 × $0.30 a month over 100 × 3600 × 730 = 262.8 M requests.
    expect(item(c, 'EMF custom metrics')).toBeCloseTo(6 / 262.8, 10);
    expect(c.usdPerMillion).toBeCloseTo(
      c.items.reduce((n, i) => n + i.usdPerMillion, 0),
      10,
    );
    // The back-of-envelope figure: about $27 of duration per million 2-second calls at 1 GB.
    expect(item(c, 'Lambda duration')).toBeGreaterThan(26.5);
    expect(item(c, 'Lambda duration')).toBeLessThan(27);
  });

  it('sizes the managed fleet by concurrency, CPU or the minimum, on the cheapest allowed type', () => {
    // 100 req/s × 2.001 s = 200 in flight / 64 per environment = 4 environments; a c7g.large
    // keeps 1 of its 2 vCPUs, so one environment each: 4 × $0.0725 beats 3 c7g.xlarge (3 × $0.145).
    const f = managedInstancesFleet(measured, { providerLatencyS: 2, requestsPerSecond: 100 }, managed);
    expect(f).toMatchObject({ executionEnvironments: 4, boundBy: 'concurrency', instanceType: 'c7g.large', instances: 4 });
    expect(f.fleetUsdPerHour).toBeCloseTo(0.29, 10);
    // Quiet traffic: the three-environment minimum.
    expect(managedInstancesFleet(measured, { providerLatencyS: 2, requestsPerSecond: 10 }, managed)).toMatchObject({
      executionEnvironments: 3,
      boundBy: 'minimum',
      instances: 3,
    });
    // CPU-bound: 1000 req/s × 5 ms = 5 vCPUs at 50 % target = 10 environments > 1000 × 0.505 / 64 = 8.
    const cpuHeavy = managedInstancesFleet({ ...measured, cpuMsPerRequest: 5 }, { providerLatencyS: 0.5, requestsPerSecond: 1000 }, managed);
    expect(cpuHeavy).toMatchObject({ executionEnvironments: 10, boundBy: 'cpu' });
    // 10 environments: 10 c7g.large ($0.725/h) or 4 c7g.xlarge at 3 each ($0.58/h).
    expect(cpuHeavy).toMatchObject({ instanceType: 'c7g.xlarge', instances: 4 });
  });

  it('itemises managed instances: instance hours, the 15 % fee, NAT hours and data', () => {
    const c = managedInstancesCost(measured, { providerLatencyS: 2, requestsPerSecond: 100 }, managed);
    const hours = 1_000_000 / 100 / 3600;
    expect(hoursPerMillion(100)).toBeCloseTo(hours, 10);
    expect(item(c, 'EC2 instances')).toBeCloseTo(0.29 * hours, 10);
    expect(item(c, 'Managed-instances fee')).toBeCloseTo(0.29 * hours * 0.15, 10);
    expect(item(c, 'NAT gateway hours')).toBeCloseTo(0.045 * hours, 10);
    // 4 environments at 25 req/s each: 500 B + 2,000 B/s ÷ 25 = 580 B of log per request, no
    // platform records; 1 WRU + 5 WRU/s ÷ 25 = 1.2 WRU.
    expect(item(c, 'CloudWatch Logs')).toBeCloseTo(0.29, 10);
    expect(item(c, 'DynamoDB writes')).toBeCloseTo(1.2 * 0.625, 10);
    // (2500 + 580) B × 1e6 = 3.08 GB at $0.045.
    expect(item(c, 'NAT data')).toBeCloseTo(3.08 * 0.045, 10);
    expect(c.items.find((i) => i.name === 'Lambda duration')).toBeUndefined();
    expect(item(c, 'API Gateway (REST)')).toBe(PRICES.apiGatewayRestPerMillion.usd);
    // An existing VPC whose egress is paid elsewhere: no NAT lines.
    const noNat = managedInstancesCost(measured, { providerLatencyS: 2, requestsPerSecond: 100 }, { ...managed, natGateways: 0 });
    expect(item(noNat, 'NAT gateway hours') + item(noNat, 'NAT data')).toBe(0);
  });

  it('shares what a busy process holds among its requests, never above what the same writes cost unshared', () => {
    expect(perRequestAt(measured, 25)).toEqual({ writeUnitsPerRequest: 1.2, readUnitsPerRequest: 0.5, logBytesPerRequest: 580 });
    expect(perRequestAt(measured, 250)).toEqual({ writeUnitsPerRequest: 1.02, readUnitsPerRequest: 0.5, logBytesPerRequest: 508 });
    // One request a second: 5 WRU and 2,000 B of shared writes each, capped at the unshared 2 WRU and 1,500 B.
    expect(perRequestAt(measured, 1)).toEqual({ writeUnitsPerRequest: 2, readUnitsPerRequest: 0.5, logBytesPerRequest: 1500 });
  });

  it('finds the break-even rate: on demand is cheaper below it, managed instances from it on', () => {
    const rps = breakEvenRps(measured, 2, onDemand, managed)!;
    expect(rps).toBeGreaterThan(0.01);
    const at = (r: number) => ({ providerLatencyS: 2, requestsPerSecond: r });
    expect(managedInstancesCost(measured, at(rps), managed).usdPerMillion).toBeLessThanOrEqual(onDemandCost(measured, at(rps), onDemand).usdPerMillion);
    expect(managedInstancesCost(measured, at(rps / 1.02), managed).usdPerMillion).toBeGreaterThan(
      onDemandCost(measured, at(rps / 1.02), onDemand).usdPerMillion,
    );
    // Waiting longer raises on-demand duration, not the managed fleet at low rates: earlier break-even.
    expect(breakEvenRps(measured, 10, onDemand, managed)!).toBeLessThan(rps);
  });

  it('refuses an instance type without a price and an environment under one vCPU', () => {
    expect(() => managedInstancesFleet(measured, { providerLatencyS: 2, requestsPerSecond: 1 }, { ...managed, instanceTypes: ['z9g.large'] })).toThrow(
      /z9g.large/,
    );
    expect(() => managedInstancesFleet(measured, { providerLatencyS: 2, requestsPerSecond: 1 }, { ...managed, memoryGiBPerVCpu: 4 })).toThrow(/one vCPU/);
  });
});

describe('right-sizing', () => {
  const opts = { maxAddedMs: 5, maxColdStartMs: 500, stepMb: 64 };
  it('picks the smallest step meeting both the added-latency and the cold-start bound', () => {
    // Cold start 209 ms needs 209 × 1769 / 500 = 739.4 MB -> 768; 1 ms CPU needs 353.8 -> 384.
    expect(rightSizeMemory(1, 209, opts)).toEqual({ memoryMb: 768, byLatencyMb: 384, byColdStartMb: 768 });
    // CPU-bound: 4 ms needs 1415.2 MB -> 1472.
    expect(rightSizeMemory(4, 100, opts)).toEqual({ memoryMb: 1472, byLatencyMb: 1472, byColdStartMb: 384 });
    // Tiny work: the 128 MB floor.
    expect(rightSizeMemory(0.1, 20, opts).memoryMb).toBe(128);
  });

  it('reports no size when even a full vCPU misses a bound', () => {
    expect(rightSizeMemory(6, 100, opts).memoryMb).toBeUndefined();
    expect(rightSizeMemory(1, 600, opts).memoryMb).toBeUndefined();
  });
});

describe('assistant runs', () => {
  it('prices Step Functions transitions, SQS FIFO requests and the on-demand model-step worker', () => {
    const c = assistantRunsCost({ stateTransitions: 5, sqsRequests: 3, lambdaInvocations: 3, workerMemoryMb: 1024 }, 2);
    expect(item(c, 'Step Functions')).toBeCloseTo(5 * 0.025 * 1000, 10);
    expect(item(c, 'SQS FIFO')).toBeCloseTo(1.5, 10);
    expect(item(c, 'Worker requests')).toBeCloseTo(0.6, 10);
    expect(item(c, 'Worker duration (model step)')).toBeCloseTo(2 * 1_000_000 * 0.0000133334, 6);
  });
});
