import type { RequestCost, RequestFacts, RequestLogRecord } from './request-record';
import { chargeBudgets, type BudgetCharge } from '../policies/budget-spend';
import { recordSpend } from './counters';
import type { Usage } from '../providers/types';
import type { CallerRequest } from '../shared/http/types';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { publishRequestMetric } from '../shared/telemetry/emf';
import { log, type LogContext } from '../shared/telemetry/logger';
import { catalogueProviderFor, loadCatalogue, warmCatalogue, type Catalogue } from './catalogue';
import { findOverride, warmOverrides } from './override-lookup';
import type { Prices } from './price-fields';

export { chargeBudgets, type BudgetCharge };

/**
 * What a request cost, from the usage the provider reported for the provider and model
 * that answered (after fallbacks, load balancing and `override_params`):
 *
 * - a workspace override for that provider and model wins; else the catalogue's price;
 * - no usage on a failed or refused request: nothing was billed, cost 0 (`not_billed`);
 * - no price anywhere, or a billable request without usage: `cost_usd: null` and
 *   `pricing_unknown: true`, never a made-up 0;
 * - a cache hit costs 0 (`price_source: cache`) and records what it saved.
 *
 * Costs are rounded to whole nano-dollars, so sums of costs (spend reports, budgets) are
 * exact integers underneath.
 */

export interface PricingInput {
  workspaceId: string;
  provider: string | undefined;
  model: string | undefined;
  usage: Usage | undefined;
  /** Rerank: search units the provider billed. */
  searchUnits?: number;
  cacheHit: boolean;
  /** The provider answered with a success status (a failure without usage was not billed). */
  succeeded: boolean;
  context?: LogContext;
}

const NANO = 1e9;
export const toNanoUsd = (usd: number) => Math.round(usd * NANO);
const roundUsd = (usd: number) => toNanoUsd(usd) / NANO;

/** Begin loading what pricing will need while the provider works. */
export function warmPricing(workspaceId: string): void {
  warmCatalogue();
  warmOverrides(workspaceId);
}

/**
 * The catalogue's usage keys (see the package's units): cached and reasoning tokens are
 * parts of input and output; the request itself is counted by the catalogue (per-request prices).
 */
function catalogueUsage(usage: Usage | undefined, searchUnits: number | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  if (searchUnits !== undefined) out.rerank_searches = searchUnits;
  if (!usage) return out;
  out.input_tokens = usage.prompt_tokens;
  out.output_tokens = usage.completion_tokens;
  const prompt = usage.prompt_tokens_details;
  const completion = usage.completion_tokens_details;
  if (prompt?.cached_tokens) out.cache_read_tokens = prompt.cached_tokens;
  if (prompt?.cache_write_tokens) out.cache_write_tokens = prompt.cache_write_tokens;
  if (prompt?.cache_write_1h_tokens) out.cache_write_1h_tokens = prompt.cache_write_1h_tokens;
  if (prompt?.audio_tokens) out.input_audio_tokens = prompt.audio_tokens;
  if (completion?.reasoning_tokens) out.output_reasoning_tokens = completion.reasoning_tokens;
  if (completion?.audio_tokens) out.output_audio_tokens = completion.audio_tokens;
  return out;
}

/** Override fields in the catalogue's price keys (per million tokens, per thousand requests). */
function catalogueModelPrice(p: Prices): Record<string, number> {
  const out: Record<string, number> = {};
  if (p.input_per_mtok !== undefined) out.input_mtok = p.input_per_mtok;
  if (p.cached_input_per_mtok !== undefined) out.cache_read_mtok = p.cached_input_per_mtok;
  if (p.cache_write_per_mtok !== undefined) out.cache_write_mtok = p.cache_write_per_mtok;
  if (p.output_per_mtok !== undefined) out.output_mtok = p.output_per_mtok;
  if (p.reasoning_per_mtok !== undefined) out.output_reasoning_mtok = p.reasoning_per_mtok;
  if (p.per_request !== undefined) out.requests_kcount = p.per_request * 1000;
  if (p.per_search_unit !== undefined) out.rerank_searches_kcount = p.per_search_unit * 1000;
  return out;
}

type Priced = { usd: number; source: 'catalogue' | 'override' } | undefined;

async function priceOf(input: PricingInput, model: string, provider: string): Promise<Priced> {
  const usage = catalogueUsage(input.usage, input.searchUnits);
  const override = await findOverride(input.workspaceId, provider, model);
  const catalogue = await loadCatalogue();
  if (override) {
    // The catalogue's arithmetic (cached and reasoning tokens as parts of input and output)
    // over a one-model provider holding the override's prices.
    const id = model.toLowerCase();
    const result = catalogue.calcPrice(usage, model, {
      provider: { id: 'override', name: 'override', api_pattern: '', models: [{ id, match: { equals: id }, prices: catalogueModelPrice(override) }] },
    });
    return result ? { usd: result.total_price, source: 'override' } : undefined;
  }
  const providerId = catalogueProviderFor(provider, model);
  if (!providerId) return undefined;
  const key = `${providerId}\u0000${model}`;
  const known = matchedModels.get(key);
  if (known === null) return undefined;
  const result = catalogue.calcPrice(usage, model, known ? { provider: known } : { providerId });
  if (known === undefined) rememberMatch(key, result && oneModelProvider(result, model));
  return result ? { usd: result.total_price, source: 'catalogue' } : undefined;
}

type CatalogueProvider = NonNullable<ReturnType<Catalogue['calcPrice']>>['provider'];

/**
 * Catalogue provider and model matched once per (provider, model): finding a model among a
 * provider's hundreds of match patterns was most of a request's pricing (about half a
 * millisecond for OpenAI). Later requests are priced against a provider holding only the
 * matched model, so its prices, including those that depend on the date or the time of
 * day, are still chosen per request. null: the catalogue has no price for it.
 */
const matchedModels = new Map<string, CatalogueProvider | null>();
const MAX_MATCHED_MODELS = 2_000;

function rememberMatch(key: string, provider: CatalogueProvider | null): void {
  if (matchedModels.size >= MAX_MATCHED_MODELS) matchedModels.clear();
  matchedModels.set(key, provider);
}

function oneModelProvider(result: NonNullable<ReturnType<Catalogue['calcPrice']>>, model: string): CatalogueProvider {
  const { provider, model: matched } = result;
  return { id: provider.id, name: provider.name, api_pattern: '', models: [{ ...matched, match: { equals: model.toLowerCase().trim() } }] };
}

const UNKNOWN: RequestCost = { cost_usd: null, price_source: null, pricing_unknown: true };

export async function priceRequest(input: PricingInput): Promise<RequestCost> {
  const billedSomething = input.usage !== undefined || input.searchUnits !== undefined;
  if (!billedSomething && (!input.succeeded || input.cacheHit)) {
    return input.cacheHit
      ? { cost_usd: 0, price_source: 'cache', pricing_unknown: false, cost_saved_usd: null }
      : { cost_usd: 0, price_source: 'not_billed', pricing_unknown: false };
  }
  const { provider, model } = input;
  if (!provider || !model || !billedSomething)
    return input.cacheHit ? { cost_usd: 0, price_source: 'cache', pricing_unknown: false, cost_saved_usd: null } : UNKNOWN;
  let priced: Priced;
  try {
    priced = await priceOf(input, model, provider);
  } catch (err) {
    log.warn('pricing failed', { provider, model, error: (err as Error).message }, input.context);
    priced = undefined;
  }
  if (input.cacheHit) return { cost_usd: 0, price_source: 'cache', pricing_unknown: false, cost_saved_usd: priced ? roundUsd(priced.usd) : null };
  return priced ? { cost_usd: roundUsd(priced.usd), price_source: priced.source, pricing_unknown: false } : UNKNOWN;
}

/** Routes that never cost anything at the provider, whatever they answer (an MCP tool call reaches no model). */
const FREE_ROUTES = new Set(['models', 'messages.count_tokens', 'responses.input_tokens', 'gemini.count_tokens', 'mcp.tools.call']);

/**
 * What a request cost, from its log facts: the provider's reported usage at the answering
 * model's price. Each request is priced once, so its `CostUSD` metric is published here.
 */
export async function priceFacts(req: CallerRequest, facts: RequestFacts): Promise<RequestCost> {
  const searchUnits = facts.extra?.search_units;
  const cost = await priceRequest({
    workspaceId: req.auth.workspaceId,
    provider: facts.provider,
    model: facts.model,
    usage: facts.usage,
    searchUnits: typeof searchUnits === 'number' ? searchUnits : undefined,
    cacheHit: facts.cacheStatus === 'HIT',
    succeeded: facts.status < 400 && facts.streamError === undefined && !FREE_ROUTES.has(facts.route),
    context: req.context,
  });
  if (cost.cost_usd !== null) {
    publishRequestMetric('CostUSD', MetricUnit.NoUnit, cost.cost_usd, ['service', 'workspace', 'provider', 'model'], {
      workspace: req.auth.workspaceId,
      provider: facts.provider ?? 'none',
      model: facts.model ?? 'none',
    });
  }
  return cost;
}

/** Once a record is stored, the spend counters count it (so they count exactly the stored records). */
export const countStored = (record: RequestLogRecord, stored: Promise<void>): Promise<void> => stored.then(() => recordSpend(record));
