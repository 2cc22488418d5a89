import type { RequestCost, RequestFacts, RequestLogRecord } from './request-record';
import type { BudgetCharge, ChargeMarker } from '../policies/budget-spend';
import type { CallerRequest } from '../shared/http/types';
import { log } from '../shared/telemetry/logger';

/**
 * Pricing is a chunk of its own, loaded by the first request that is dispatched (while the
 * provider works), never at cold start: the gateway's cold-start code stays within budget.
 */
let pricing: Promise<typeof import('./pricing')> | undefined;

function loadPricing(): Promise<typeof import('./pricing')> {
  if (!pricing) {
    pricing = import('./pricing');
    pricing.catch(() => {
      pricing = undefined;
    });
  }
  return pricing;
}

/** Start loading the pricing code, the catalogue and the workspace's overrides. */
export function warmPricing(workspaceId: string): void {
  loadPricing().then(
    (m) => m.warmPricing(workspaceId),
    () => undefined,
  );
}

/**
 * What a request cost, from its log facts. If the pricing code cannot be loaded the cost is
 * unknown: the request's log record is written all the same.
 */
export async function priceFacts(req: CallerRequest, facts: RequestFacts): Promise<RequestCost> {
  let pricing: typeof import('./pricing');
  try {
    pricing = await loadPricing();
  } catch (err) {
    log.warn('pricing unavailable', { error: (err as Error).message }, req.context);
    return { cost_usd: null, price_source: null, pricing_unknown: true };
  }
  return pricing.priceFacts(req, facts);
}

/** Once a record is stored: its spend counters. */
export const countStored = async (record: RequestLogRecord, stored: Promise<void>): Promise<void> => (await loadPricing()).countStored(record, stored);

/**
 * The budget charges of requests whose log records are being written: sent with them, so
 * a crash takes a record and its charge together (sent in the same turn), or neither.
 */
export const chargeBudgets = async (charges: BudgetCharge[], marker?: ChargeMarker): Promise<void> => (await loadPricing()).chargeBudgets(charges, marker);
