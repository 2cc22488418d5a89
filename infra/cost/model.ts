import { frontDoorItems, type FrontDoorKind } from './growth';
import { EC2_INSTANCE_PRICES, HOURS_PER_MONTH, LAMBDA_FACTS, PRICES } from './prices';

/**
 * Cost per million requests of the gateway in its two capacity modes, from measured inputs
 * (`npm run bench` measures them) and the list prices of infra/cost/prices.ts. Pure
 * arithmetic: no I/O, no defaults hidden in the formulas; every line item is returned so
 * the tables can show where the money goes.
 */

/** DynamoDB units and log bytes of the gateway's requests in one way of serving them. */
export interface WritesAndLogs {
  /**
   * DynamoDB write and read request units each request costs itself (item-size based, as
   * DynamoDB bills them), counted by the bench: request-log records, and in a process serving
   * one request at a time also its counters (rate limits, spend).
   */
  writeUnitsPerRequest: number;
  readUnitsPerRequest: number;
  /** Bytes each request writes to the function's log (JSON log lines, EMF documents or its values in a shared one). */
  logBytesPerRequest: number;
  /**
   * What a busy process writes for all its requests together, per second: counters and EMF
   * documents held for up to a second and shared (functions/shared/telemetry/invocations.ts).
   * Per request that is this over the process's request rate; 0 for a process serving one
   * request at a time, which holds nothing.
   */
  heldWriteUnitsPerSecond: number;
  heldLogBytesPerSecond: number;
}

/** What one request costs in resources, as measured by the bench on the gateway group. */
export interface MeasuredInputs {
  /** CPU time of the gateway process per request, ms on one full core. */
  cpuMsPerRequest: number;
  /** One request at a time per process, as Lambda on demand serves them: everything is written per request. */
  alone: WritesAndLogs;
  /** Many requests at once per process (managed instances), measured at `requestsPerSecond` in one process. */
  busy: WritesAndLogs & { requestsPerSecond: number };
  /** Bytes sent to and received from the model provider per request (NAT data in managed-instances mode). */
  providerBytesPerRequest: number;
  /** Distinct custom metrics (name × dimension set) the EMF documents create. */
  customMetrics: number;
}

/**
 * Units and bytes per request of a process serving `requestsPerSecond`: its own, plus its
 * share of what the process holds and writes once a second (never more than the same writes
 * cost unshared, as measured alone).
 */
export function perRequestAt(
  m: MeasuredInputs,
  requestsPerSecond: number,
): Pick<WritesAndLogs, 'writeUnitsPerRequest' | 'readUnitsPerRequest' | 'logBytesPerRequest'> {
  const share = (held: number, own: number, alone: number) => own + Math.min(held / requestsPerSecond, Math.max(0, alone - own));
  return {
    writeUnitsPerRequest: share(m.busy.heldWriteUnitsPerSecond, m.busy.writeUnitsPerRequest, m.alone.writeUnitsPerRequest),
    readUnitsPerRequest: m.busy.readUnitsPerRequest,
    logBytesPerRequest: share(m.busy.heldLogBytesPerSecond, m.busy.logBytesPerRequest, m.alone.logBytesPerRequest),
  };
}

export interface Traffic {
  /** Provider latency: how long each request waits for the model, seconds. */
  providerLatencyS: number;
  /** Steady request rate. */
  requestsPerSecond: number;
}

export interface OnDemandSettings {
  memoryMb: number;
  /** Default `api-gateway`: the front door's per-request fees (infra/cost/growth.ts). */
  frontDoor?: FrontDoorKind;
  /** Log bytes Lambda itself adds per invocation (platform start and report records). */
  platformLogBytesPerInvoke: number;
}

export interface ManagedInstancesSettings {
  instanceTypes: readonly string[];
  /** Default `api-gateway`: the front door's per-request fees (infra/cost/growth.ts). */
  frontDoor?: FrontDoorKind;
  memoryMb: number;
  memoryGiBPerVCpu: number;
  perExecutionEnvironmentMaxConcurrency: number;
  minExecutionEnvironments: number;
  /** CPU utilisation the scaler keeps environments under (fraction of their vCPUs). */
  cpuTargetUtilization: number;
  /** NAT gateways of the VPC (0 when an existing VPC's egress is paid elsewhere). */
  natGateways: number;
}

export interface LineItem {
  name: string;
  usdPerMillion: number;
  detail: string;
}

export interface ModeCost {
  mode: 'on-demand' | 'managed-instances';
  items: LineItem[];
  usdPerMillion: number;
}

export interface OnDemandCost extends ModeCost {
  mode: 'on-demand';
  /** Billed duration of one request, seconds. */
  billedSeconds: number;
}

export interface ManagedInstancesCost extends ModeCost {
  mode: 'managed-instances';
  executionEnvironments: number;
  /** What set the environment count: the minimum, concurrency or CPU. */
  boundBy: 'minimum' | 'concurrency' | 'cpu';
  instanceType: string;
  instances: number;
  /** EC2 on-demand price of the fleet per hour, before the management fee. */
  fleetUsdPerHour: number;
}

const MILLION = 1_000_000;
const round = (v: number, digits = 4) => Math.round(v * 10 ** digits) / 10 ** digits;
const sum = (items: LineItem[]) => items.reduce((n, i) => n + i.usdPerMillion, 0);

/** Hours it takes to serve a million requests at a steady rate. */
export const hoursPerMillion = (requestsPerSecond: number): number => MILLION / requestsPerSecond / 3600;

/**
 * Processing time a request adds on a function of `memoryMb`, assuming (as Lambda
 * documents for the share of a vCPU) that CPU scales linearly with memory up to one full
 * vCPU at 1,769 MB; above that a single-threaded request gets no faster.
 */
export function processingMs(cpuMsPerRequest: number, memoryMb: number): number {
  return cpuMsPerRequest * Math.max(1, LAMBDA_FACTS.fullVcpuMemoryMb / memoryMb);
}

/** Items every mode pays the same way: the front door, Lambda requests, DynamoDB, logs, metrics. */
function sharedItems(
  m: MeasuredInputs,
  t: Traffic,
  w: Pick<WritesAndLogs, 'writeUnitsPerRequest' | 'readUnitsPerRequest' | 'logBytesPerRequest'>,
  frontDoor: FrontDoorKind = 'api-gateway',
): LineItem[] {
  const monthlyMillions = (t.requestsPerSecond * 3600 * HOURS_PER_MONTH) / MILLION;
  const door = frontDoorItems(frontDoor, t.requestsPerSecond);
  return [
    ...door,
    {
      name: 'Lambda requests',
      usdPerMillion: PRICES.lambdaRequestsPerMillion.usd,
      detail: `$${PRICES.lambdaRequestsPerMillion.usd} ${PRICES.lambdaRequestsPerMillion.unit}`,
    },
    {
      name: 'DynamoDB writes',
      usdPerMillion: w.writeUnitsPerRequest * PRICES.dynamoWriteRequestUnitsPerMillion.usd,
      detail: `${round(w.writeUnitsPerRequest, 3)} WRU/request × $${PRICES.dynamoWriteRequestUnitsPerMillion.usd}/M`,
    },
    {
      name: 'DynamoDB reads',
      usdPerMillion: w.readUnitsPerRequest * PRICES.dynamoReadRequestUnitsPerMillion.usd,
      detail: `${round(w.readUnitsPerRequest, 3)} RRU/request × $${PRICES.dynamoReadRequestUnitsPerMillion.usd}/M`,
    },
    {
      name: 'CloudWatch Logs',
      usdPerMillion: (w.logBytesPerRequest * MILLION * PRICES.cloudWatchLogsIngestionPerGb.usd) / 1e9,
      detail: `${Math.round(w.logBytesPerRequest)} B/request × $${PRICES.cloudWatchLogsIngestionPerGb.usd}/GB`,
    },
    {
      name: 'EMF custom metrics',
      usdPerMillion: (m.customMetrics * PRICES.cloudWatchCustomMetricPerMonth.usd) / monthlyMillions,
      detail: `${m.customMetrics} metrics × $${PRICES.cloudWatchCustomMetricPerMonth.usd}/month over ${round(monthlyMillions, 1)} M requests/month`,
    },
  ];
}

export function onDemandCost(m: MeasuredInputs, t: Traffic, s: OnDemandSettings): OnDemandCost {
  const billedSeconds = t.providerLatencyS + processingMs(m.cpuMsPerRequest, s.memoryMb) / 1000;
  const gbSeconds = (billedSeconds * s.memoryMb) / 1024;
  const items = sharedItems(m, t, { ...m.alone, logBytesPerRequest: m.alone.logBytesPerRequest + s.platformLogBytesPerInvoke }, s.frontDoor);
  items.splice(items.findIndex((i) => i.name === 'Lambda requests') + 1, 0, {
    name: 'Lambda duration',
    usdPerMillion: gbSeconds * MILLION * PRICES.lambdaArmGbSecond.usd,
    detail: `${round(billedSeconds, 4)} s × ${s.memoryMb} MB = ${round(gbSeconds, 4)} GB-s/request × $${PRICES.lambdaArmGbSecond.usd}`,
  });
  return { mode: 'on-demand', items, usdPerMillion: sum(items), billedSeconds };
}

/** Environments, instances and their price for a steady load on managed instances. */
export function managedInstancesFleet(m: MeasuredInputs, t: Traffic, s: ManagedInstancesSettings) {
  const vcpusPerEnvironment = s.memoryMb / 1024 / s.memoryGiBPerVCpu;
  if (vcpusPerEnvironment < 1) throw new Error(`An execution environment needs at least one vCPU: ${s.memoryMb} MB at ${s.memoryGiBPerVCpu} GiB/vCPU.`);
  // Requests in flight: each waits for the provider, then uses its CPU time.
  const concurrent = t.requestsPerSecond * (t.providerLatencyS + m.cpuMsPerRequest / 1000);
  const byConcurrency = Math.ceil(concurrent / s.perExecutionEnvironmentMaxConcurrency);
  const cpuVcpus = (t.requestsPerSecond * m.cpuMsPerRequest) / 1000;
  const byCpu = Math.ceil(cpuVcpus / (vcpusPerEnvironment * s.cpuTargetUtilization));
  const executionEnvironments = Math.max(s.minExecutionEnvironments, byConcurrency, byCpu);
  const boundBy: ManagedInstancesCost['boundBy'] =
    executionEnvironments === s.minExecutionEnvironments ? 'minimum' : byConcurrency >= byCpu ? 'concurrency' : 'cpu';

  // The cheapest fleet among the allowed types: environments packed by vCPU and memory
  // after what each instance keeps for itself, at least the three instances Lambda starts.
  let best: { instanceType: string; instances: number; fleetUsdPerHour: number } | undefined;
  for (const type of s.instanceTypes) {
    const price = EC2_INSTANCE_PRICES[type];
    if (!price) throw new Error(`No price for instance type '${type}' in infra/cost/prices.ts.`);
    const perInstance = Math.min(
      Math.floor((price.vcpus - LAMBDA_FACTS.instanceReservedVcpus) / vcpusPerEnvironment),
      Math.floor((price.memoryGiB - LAMBDA_FACTS.instanceReservedMemoryGiB) / (s.memoryMb / 1024)),
    );
    if (perInstance < 1) continue;
    const instances = Math.max(LAMBDA_FACTS.managedInstancesMinInstances, Math.ceil(executionEnvironments / perInstance));
    const fleetUsdPerHour = instances * price.usdPerHour;
    if (!best || fleetUsdPerHour < best.fleetUsdPerHour) best = { instanceType: type, instances, fleetUsdPerHour };
  }
  if (!best) throw new Error(`None of ${s.instanceTypes.join(', ')} fits an execution environment of ${s.memoryMb} MB.`);
  return { executionEnvironments, boundBy, concurrent, ...best };
}

export function managedInstancesCost(m: MeasuredInputs, t: Traffic, s: ManagedInstancesSettings): ManagedInstancesCost {
  const fleet = managedInstancesFleet(m, t, s);
  const hours = hoursPerMillion(t.requestsPerSecond);
  const perRequest = perRequestAt(m, t.requestsPerSecond / fleet.executionEnvironments);
  const items = sharedItems(m, t, perRequest, s.frontDoor);
  const natData = m.providerBytesPerRequest + perRequest.logBytesPerRequest;
  items.splice(
    items.findIndex((i) => i.name === 'Lambda requests') + 1,
    0,
    {
      name: 'EC2 instances',
      usdPerMillion: fleet.fleetUsdPerHour * hours,
      detail: `${fleet.instances} × ${fleet.instanceType} ($${round(fleet.fleetUsdPerHour, 4)}/h) × ${round(hours, 3)} h; ${fleet.executionEnvironments} environments (${fleet.boundBy}), ${Math.round(fleet.concurrent)} requests in flight`,
    },
    {
      name: 'Managed-instances fee',
      usdPerMillion: fleet.fleetUsdPerHour * hours * PRICES.managedInstancesFeeRate.usd,
      detail: `${PRICES.managedInstancesFeeRate.usd * 100}% of the EC2 price`,
    },
    {
      name: 'NAT gateway hours',
      usdPerMillion: s.natGateways * PRICES.natGatewayHour.usd * hours,
      detail: `${s.natGateways} × $${PRICES.natGatewayHour.usd}/h × ${round(hours, 3)} h`,
    },
    {
      name: 'NAT data',
      usdPerMillion: s.natGateways > 0 ? (natData * MILLION * PRICES.natGatewayPerGb.usd) / 1e9 : 0,
      detail: `${Math.round(natData)} B/request (provider traffic and logs) × $${PRICES.natGatewayPerGb.usd}/GB`,
    },
  );
  return { mode: 'managed-instances', items, usdPerMillion: sum(items), ...fleet };
}

/**
 * The lowest steady rate (requests/s) from which managed instances cost no more per
 * million requests than on demand, at one provider latency; undefined if they never do
 * up to `maxRps`. Managed instances' cost per request falls with traffic (fixed fleet
 * and NAT hours spread over more requests) in steps as environments are added, so the
 * rates are scanned in 1 % steps rather than solved for.
 */
export function breakEvenRps(
  m: MeasuredInputs,
  providerLatencyS: number,
  onDemand: OnDemandSettings,
  managed: ManagedInstancesSettings,
  maxRps = 100_000,
): number | undefined {
  for (let rps = 0.01; rps <= maxRps; rps *= 1.01) {
    const t = { providerLatencyS, requestsPerSecond: rps };
    if (managedInstancesCost(m, t, managed).usdPerMillion <= onDemandCost(m, t, onDemand).usdPerMillion) return round(rps, 2);
  }
  return undefined;
}

export interface RightSizing {
  /** Smallest memory (MB, a multiple of `stepMb`) that meets both bounds; undefined if none up to one full vCPU does. */
  memoryMb: number | undefined;
  /** The bound each criterion sets on its own. */
  byLatencyMb: number;
  byColdStartMb: number;
}

/**
 * On-demand memory from measurement: CPU time per request and cold-start time measured on
 * one full core stretch by 1,769 MB / memory below 1,769 MB (Lambda's CPU share), so the
 * smallest memory whose added latency stays under `maxAddedMs` and whose cold start stays
 * under `maxColdStartMs` is their bound rounded up to `stepMb` (at least 128 MB). Above
 * 1,769 MB more memory buys no single-threaded speed, so a bound beyond it cannot be met.
 */
export function rightSizeMemory(
  cpuMsPerRequest: number,
  coldStartMs: number,
  opts: { maxAddedMs: number; maxColdStartMs: number; stepMb: number },
): RightSizing {
  const full = LAMBDA_FACTS.fullVcpuMemoryMb;
  const bound = (ms: number, max: number) => Math.max(128, Math.ceil((ms * full) / max / opts.stepMb) * opts.stepMb);
  const byLatencyMb = bound(cpuMsPerRequest, opts.maxAddedMs);
  const byColdStartMb = bound(coldStartMs, opts.maxColdStartMs);
  const need = Math.max(byLatencyMb, byColdStartMb);
  const met = cpuMsPerRequest <= opts.maxAddedMs && coldStartMs <= opts.maxColdStartMs;
  return { memoryMb: met ? Math.min(need, Math.ceil(full / opts.stepMb) * opts.stepMb) : undefined, byLatencyMb, byColdStartMb };
}

/** What one non-streamed assistant run uses besides its API requests (counted from the workflow definition). */
export interface RunShape {
  /** States the execution enters (Step Functions bills each transition). */
  stateTransitions: number;
  /** SQS FIFO requests per run: send, receive, delete. */
  sqsRequests: number;
  /** Worker invocations: the queue consumer that starts the execution, and each task state. */
  lambdaInvocations: number;
  /** Worker memory, MB (workers stay on demand in both capacity modes). */
  workerMemoryMb: number;
}

/**
 * Step Functions, SQS and the on-demand workers of a million non-streamed assistant runs
 * (each with one model step that waits `providerLatencyS`); the API requests that create
 * and read the runs are priced like any other request. DynamoDB writes of runs, steps and
 * messages are not included (the bench does not count them).
 */
export function assistantRunsCost(shape: RunShape, providerLatencyS: number): ModeCost {
  const gbSeconds = (providerLatencyS * shape.workerMemoryMb) / 1024;
  const items: LineItem[] = [
    {
      name: 'Step Functions',
      usdPerMillion: (shape.stateTransitions * MILLION * PRICES.stepFunctionsPerThousandTransitions.usd) / 1000,
      detail: `${shape.stateTransitions} transitions/run × $${PRICES.stepFunctionsPerThousandTransitions.usd} per 1,000`,
    },
    {
      name: 'SQS FIFO',
      usdPerMillion: shape.sqsRequests * PRICES.sqsFifoPerMillion.usd,
      detail: `${shape.sqsRequests} requests/run × $${PRICES.sqsFifoPerMillion.usd}/M`,
    },
    {
      name: 'Worker requests',
      usdPerMillion: shape.lambdaInvocations * PRICES.lambdaRequestsPerMillion.usd,
      detail: `${shape.lambdaInvocations} invocations/run × $${PRICES.lambdaRequestsPerMillion.usd}/M`,
    },
    {
      name: 'Worker duration (model step)',
      usdPerMillion: gbSeconds * MILLION * PRICES.lambdaArmGbSecond.usd,
      detail: `${providerLatencyS} s × ${shape.workerMemoryMb} MB × $${PRICES.lambdaArmGbSecond.usd}/GB-s`,
    },
  ];
  return { mode: 'on-demand', items, usdPerMillion: sum(items) };
}
