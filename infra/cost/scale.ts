import { recordWriteUnits } from './growth';
import { managedInstancesCost, onDemandCost, type ManagedInstancesSettings, type MeasuredInputs, type OnDemandSettings } from './model';
import { EC2_INSTANCE_PRICES, QUOTAS } from './prices';

/**
 * The scale table (issue 37 item 6): 10 to 10,000 requests a second of one workspace, what
 * each mode costs per million there, and which AWS quota binds first on the way, with what it
 * takes to raise it. The quotas are the defaults of infra/cost/prices.ts QUOTAS (docs/deploy.md's
 * quota table has the same numbers and the Service Quotas codes).
 */

export const SCALE_RATES = [10, 100, 1000, 10_000] as const;

export interface QuotaCheck {
  quota: string;
  /** What the load asks of it, and the limit. */
  demand: number;
  limit: number;
  binds: boolean;
  /** What it takes to raise it. */
  raise: string;
}

export interface ScaleRow {
  requestsPerSecond: number;
  onDemand: { usdPerMillion: number; concurrency: number };
  managedInstances: { usdPerMillion: number; instances: number; instanceType: string; vcpus: number; environments: number };
  /** Write units a second on the hottest single key (one workspace's request-log partition, unsharded). */
  hottestKeyWcu: number;
  quotas: QuotaCheck[];
}

export interface ScaleSettings {
  providerLatencyS: number;
  onDemand: OnDemandSettings;
  managed: ManagedInstancesSettings;
  /** The capacity provider's vCPU ceiling (-c maxVCpuCount). */
  maxVCpuCount: number;
  /** Request-log record size and metadata keys: the request-log partition's write units per request. */
  recordKb: number;
  /** How long a decrypted credential stays cached per environment, seconds. */
  credentialCacheSeconds: number;
}

export const RAISE = {
  lambdaConcurrency: 'Service Quotas L-B99A9384 (no fee), then -c accountConcurrency; or Managed Instances',
  managedVcpus: '-c maxVCpuCount after raising EC2 On-Demand vCPUs (L-1216C47A, no fee); the instances are the cost, in the $/M column',
  apiStage: 'STAGE_THROTTLING in infra/stacks/api-stack.ts, or the function-URL front door (no stage throttle)',
  apiAccount: 'Service Quotas (API Gateway throttle rate, no fee), or the function-URL front door',
  partition: 'not adjustable: write sharding of the key (the same write units, spread; listing reads every shard)',
  kms: 'Service Quotas (KMS symmetric request rate, no fee)',
} as const;

export function scaleRows(m: MeasuredInputs, s: ScaleSettings, rates: readonly number[] = SCALE_RATES): ScaleRow[] {
  return rates.map((requestsPerSecond) => {
    const t = { providerLatencyS: s.providerLatencyS, requestsPerSecond };
    const od = onDemandCost(m, t, s.onDemand);
    const mi = managedInstancesCost(m, t, s.managed);
    const concurrency = requestsPerSecond * od.billedSeconds;
    const vcpus = mi.instances * EC2_INSTANCE_PRICES[mi.instanceType]!.vcpus;
    const hottestKeyWcu = requestsPerSecond * recordWriteUnits(s.recordKb, 0);
    const kmsRps = Math.max(concurrency, mi.executionEnvironments) / s.credentialCacheSeconds;
    const check = (quota: string, demand: number, limit: number, raise: string): QuotaCheck => ({
      quota,
      demand: Math.round(demand),
      limit,
      binds: demand > limit,
      raise,
    });
    const apiGateway = (s.onDemand.frontDoor ?? 'api-gateway') === 'api-gateway' || (s.managed.frontDoor ?? 'api-gateway') === 'api-gateway';
    return {
      requestsPerSecond,
      onDemand: { usdPerMillion: od.usdPerMillion, concurrency: Math.round(concurrency) },
      managedInstances: {
        usdPerMillion: mi.usdPerMillion,
        instances: mi.instances,
        instanceType: mi.instanceType,
        vcpus,
        environments: mi.executionEnvironments,
      },
      hottestKeyWcu,
      quotas: [
        check('Lambda concurrency (on demand)', concurrency, QUOTAS.lambdaConcurrency, RAISE.lambdaConcurrency),
        check('Managed Instances vCPUs', vcpus, s.maxVCpuCount, RAISE.managedVcpus),
        ...(apiGateway
          ? [
              check('API Gateway stage throttle', requestsPerSecond, QUOTAS.apiGatewayStageRps, RAISE.apiStage),
              check('API Gateway account throttle', requestsPerSecond, QUOTAS.apiGatewayAccountRps, RAISE.apiAccount),
            ]
          : []),
        check('DynamoDB partition (request-log key, unsharded)', hottestKeyWcu, QUOTAS.dynamoPartitionWcu, RAISE.partition),
        check('KMS requests', kmsRps, QUOTAS.kmsRps, RAISE.kms),
      ],
    };
  });
}
