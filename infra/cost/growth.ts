import { HOURS_PER_MONTH, PRICES } from './prices';

/**
 * What the measured request of the cost model (infra/cost/model.ts) leaves out, and what
 * grows with a real workload (issue 37 item 6, issue 38 item 4): the front door's own fees,
 * request-log record size and metadata index writes, extra spend counters, budget and
 * tokens policies, storage and point-in-time recovery, KMS, X-Ray, API access logs, answer
 * bytes (data transfer out, and NAT on Managed Instances) and custom-metric cardinality.
 * Pure arithmetic on list prices; each item says how it is computed.
 */

export type FrontDoorKind = 'api-gateway' | 'function-url' | 'cloudfront';

export interface LineItem {
  name: string;
  usdPerMillion: number;
  detail: string;
}

const MILLION = 1_000_000;
const GB = 1e9;
const sum = (items: readonly LineItem[]) => items.reduce((n, i) => n + i.usdPerMillion, 0);
export const monthlyMillions = (requestsPerSecond: number) => (requestsPerSecond * 3600 * HOURS_PER_MONTH) / MILLION;

/** WAF rules of the edge web ACL (infra/stacks/edge-waf-stack.ts): the common rule set and the rate rule. */
export const EDGE_WAF_RULES = 2;

/**
 * The front door's per-request fees (answer bytes are `growthItems`' data transfer). A
 * function URL has none: Lambda bills its invocations as any other. CloudFront adds its
 * request fee, WAF's per-request fee and the web ACL's monthly fees spread over the traffic.
 */
export function frontDoorItems(kind: FrontDoorKind, requestsPerSecond: number): LineItem[] {
  if (kind === 'api-gateway') {
    const price = PRICES.apiGatewayRestPerMillion;
    return [{ name: 'API Gateway (REST)', usdPerMillion: price.usd, detail: `$${price.usd} ${price.unit}` }];
  }
  if (kind === 'function-url')
    return [{ name: 'Function URL', usdPerMillion: 0, detail: 'no per-request fee (Lambda requests and duration as for any invoke)' }];
  const fixedPerMonth = PRICES.wafWebAclPerMonth.usd + EDGE_WAF_RULES * PRICES.wafRulePerMonth.usd;
  return [
    {
      name: 'CloudFront requests',
      usdPerMillion: PRICES.cloudFrontHttpsPerMillion.usd,
      detail: `$${PRICES.cloudFrontHttpsPerMillion.usd} ${PRICES.cloudFrontHttpsPerMillion.unit}`,
    },
    {
      name: 'WAF requests',
      usdPerMillion: PRICES.wafRequestsPerMillion.usd,
      detail: `$${PRICES.wafRequestsPerMillion.usd} ${PRICES.wafRequestsPerMillion.unit}`,
    },
    {
      name: 'WAF web ACL and rules',
      usdPerMillion: fixedPerMonth / monthlyMillions(requestsPerSecond),
      detail: `$${fixedPerMonth}/month (web ACL + ${EDGE_WAF_RULES} rules) over ${round(monthlyMillions(requestsPerSecond), 1)} M requests/month`,
    },
  ];
}

/** What one request carries beyond the bench's measured one (a 1 KB record, no metadata, one spend counter). */
export interface RequestProfile {
  name: string;
  /** Request-log record size in KB (a write unit per started KB, in the table and in every index that projects it). */
  recordKb: number;
  /** Well-known metadata keys the request carries: each is one more write of the record, into its `meta_*` index. */
  metadataIndexes: number;
  /** Spend counters beyond the measured request's (per key, per metadata value, ...). */
  extraSpendCounters: number;
  /** Budgets the request is charged to. */
  budgets: number;
  /** Tokens rate-limit policies over the request's key (a reservation and its settlement each). */
  tokensPolicies: number;
  /** Bytes of the answer sent to the caller (a streamed answer: one SSE event of ~230 B per token). */
  answerBytes: number;
  /** Bytes of the provider's answer beyond the measured non-streamed one (NAT data on Managed Instances). */
  extraUpstreamBytes: number;
  /** Distinct custom metrics the EMF documents create (routes x providers x models, ...). */
  customMetrics: number;
  /** Days request-log records are kept (REQUEST_LOG_TTL_DAYS): the stored, backed-up volume. */
  retentionDays: number;
}

/** The bench's measured request itself: nothing beyond what the model already prices, but storage and the answer it sends. */
export const MEASURED_PROFILE: RequestProfile = {
  name: 'measured request (1 KB record, no metadata)',
  recordKb: 1,
  metadataIndexes: 0,
  extraSpendCounters: 0,
  budgets: 0,
  tokensPolicies: 0,
  answerBytes: 1_500,
  extraUpstreamBytes: 0,
  customMetrics: 0,
  retentionDays: 30,
};

/**
 * A busy production request: a 2 KB record with the four well-known metadata keys, two more
 * spend counters, a budget and a tokens policy, a streamed 300-token answer (~230 B an SSE
 * event: 69 KB to the caller, ~80 KB from the provider), 200 custom metrics.
 */
export const REALISTIC_PROFILE: RequestProfile = {
  name: 'realistic (2 KB record, 4 metadata keys, budget, tokens policy, streamed 300-token answer)',
  recordKb: 2,
  metadataIndexes: 4,
  extraSpendCounters: 2,
  budgets: 1,
  tokensPolicies: 1,
  answerBytes: 300 * 230,
  extraUpstreamBytes: 80_000 - 1_500,
  customMetrics: 200,
  retentionDays: 30,
};

export interface GrowthContext {
  mode: 'on-demand' | 'managed-instances';
  frontDoor: FrontDoorKind;
  requestsPerSecond: number;
  /** Managed instances: execution environments serving the traffic (counters are held and written once a second per environment). */
  environments: number;
  /** How long a request holds its on-demand environment, seconds. */
  requestSeconds: number;
  /** NAT gateways on the provider path (managed instances in a new VPC). */
  natGateways: number;
  /** Custom metrics the measured request already created (priced by the model). */
  measuredCustomMetrics: number;
  /** Seconds a decrypted provider credential stays cached per environment (CONTROL_CACHE_TTL_MS). */
  credentialCacheSeconds: number;
  /** Bytes of one API Gateway access-log line. */
  accessLogBytes: number;
}

/**
 * Writes a counter-like charge costs per request: on demand every request writes it; on
 * Managed Instances an environment holds increments and writes each counter once a second,
 * so a request pays its share, never more than writing it itself.
 */
function counterWrites(perRequest: number, c: GrowthContext): number {
  if (c.mode === 'on-demand') return perRequest;
  return Math.min(perRequest, (perRequest * c.environments) / c.requestsPerSecond);
}

const wru = (units: number) => units * PRICES.dynamoWriteRequestUnitsPerMillion.usd;

export function growthItems(p: RequestProfile, c: GrowthContext): LineItem[] {
  const recordUnits = Math.ceil(p.recordKb);
  const storedGb = (c.requestsPerSecond * 86_400 * p.retentionDays * p.recordKb * 1024 * (1 + p.metadataIndexes)) / GB;
  const perMillionOfMonthly = (usdPerMonth: number) => usdPerMonth / monthlyMillions(c.requestsPerSecond);
  const sampled = Math.min(c.requestsPerSecond, 1) + 0.05 * Math.max(0, c.requestsPerSecond - 1);
  const decryptsPerSecond =
    c.mode === 'on-demand' ? (c.requestsPerSecond * c.requestSeconds) / c.credentialCacheSeconds : c.environments / c.credentialCacheSeconds;
  const tokenWrites = counterWrites(2 * p.tokensPolicies, c);
  const items: LineItem[] = [
    {
      name: 'Record size',
      usdPerMillion: wru(recordUnits - 1),
      detail: `${p.recordKb} KB record: ${recordUnits} WRU instead of the measured 1`,
    },
    {
      name: 'Metadata index writes',
      usdPerMillion: wru(p.metadataIndexes * recordUnits),
      detail: `${p.metadataIndexes} meta_* index writes × ${recordUnits} WRU`,
    },
    {
      name: 'Extra spend counters',
      usdPerMillion: wru(counterWrites(p.extraSpendCounters, c)),
      detail: `${p.extraSpendCounters} counters: ${round(counterWrites(p.extraSpendCounters, c), 3)} WRU/request (${c.mode === 'on-demand' ? 'each request' : 'once a second per environment'})`,
    },
    {
      name: 'Budget charges',
      usdPerMillion: wru(counterWrites(p.budgets, c)),
      detail: `budgets: ${p.budgets}, ${round(counterWrites(p.budgets, c), 3)} WRU/request`,
    },
    {
      name: 'Tokens policies',
      usdPerMillion: wru(tokenWrites),
      detail: `tokens policies: ${p.tokensPolicies}, reservation + settlement each: ${round(tokenWrites, 3)} WRU/request`,
    },
    {
      name: 'DynamoDB storage (request logs)',
      usdPerMillion: perMillionOfMonthly(storedGb * PRICES.dynamoStoragePerGbMonth.usd),
      detail: `${round(storedGb, 1)} GB kept (${p.retentionDays} days, table + ${p.metadataIndexes} indexes) × $${PRICES.dynamoStoragePerGbMonth.usd}/GB-month`,
    },
    {
      name: 'Point-in-time recovery',
      usdPerMillion: perMillionOfMonthly(storedGb * PRICES.dynamoPitrPerGbMonth.usd),
      detail: `${round(storedGb, 1)} GB × $${PRICES.dynamoPitrPerGbMonth.usd}/GB-month (on for every table)`,
    },
    {
      name: 'KMS requests',
      usdPerMillion: (decryptsPerSecond / c.requestsPerSecond) * PRICES.kmsRequestsPerMillion.usd,
      detail: `a credential decrypt per environment per ${c.credentialCacheSeconds} s: ${round(decryptsPerSecond, 2)}/s`,
    },
    {
      name: 'X-Ray traces',
      usdPerMillion: (sampled / c.requestsPerSecond) * PRICES.xrayTracesRecordedPerMillion.usd,
      detail: `default sampling (1/s + 5 %): ${round((100 * sampled) / c.requestsPerSecond, 1)} % of requests traced × $${PRICES.xrayTracesRecordedPerMillion.usd}/M`,
    },
    {
      name: 'API access logs',
      usdPerMillion: c.frontDoor === 'api-gateway' ? (c.accessLogBytes * MILLION * PRICES.cloudWatchLogsIngestionPerGb.usd) / GB : 0,
      detail:
        c.frontDoor === 'api-gateway'
          ? `${c.accessLogBytes} B/request × $${PRICES.cloudWatchLogsIngestionPerGb.usd}/GB`
          : 'none (CloudFront standard logs go to S3 at storage cost)',
    },
    {
      name: 'Answer bytes out',
      usdPerMillion: (p.answerBytes * MILLION * (c.frontDoor === 'cloudfront' ? PRICES.cloudFrontDataOutPerGb.usd : PRICES.dataTransferOutPerGb.usd)) / GB,
      detail: `${p.answerBytes} B/request × $${c.frontDoor === 'cloudfront' ? PRICES.cloudFrontDataOutPerGb.usd : PRICES.dataTransferOutPerGb.usd}/GB`,
    },
    {
      name: 'NAT data (streamed answer)',
      usdPerMillion: c.mode === 'managed-instances' && c.natGateways > 0 ? (p.extraUpstreamBytes * MILLION * PRICES.natGatewayPerGb.usd) / GB : 0,
      detail: `${p.extraUpstreamBytes} B/request more from the provider × $${PRICES.natGatewayPerGb.usd}/GB`,
    },
    {
      name: 'Custom metrics (cardinality)',
      usdPerMillion: perMillionOfMonthly(Math.max(0, p.customMetrics - c.measuredCustomMetrics) * PRICES.cloudWatchCustomMetricPerMonth.usd),
      detail: `${p.customMetrics} metrics instead of the measured ${c.measuredCustomMetrics} × $${PRICES.cloudWatchCustomMetricPerMonth.usd}/month`,
    },
  ];
  return items;
}

export const growthTotal = (p: RequestProfile, c: GrowthContext) => sum(growthItems(p, c));

/** Write units one request's log record costs in the table and its indexes, by record size: what the hottest key takes. */
export function recordWriteUnits(recordKb: number, metadataIndexes: number): number {
  return Math.ceil(recordKb) * (1 + metadataIndexes);
}

function round(v: number, digits: number) {
  return Math.round(v * 10 ** digits) / 10 ** digits;
}
