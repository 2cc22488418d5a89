/** The prices a workspace override can set (USD), and the override as the API returns it. */
export const PRICE_FIELDS = {
  input_per_mtok: 'USD per million input (prompt) tokens, cached ones included unless `cached_input_per_mtok` is set',
  cached_input_per_mtok: 'USD per million prompt tokens read from the provider’s prompt cache',
  cache_write_per_mtok: 'USD per million prompt tokens written to the provider’s prompt cache',
  output_per_mtok: 'USD per million output (completion) tokens, reasoning included unless `reasoning_per_mtok` is set',
  reasoning_per_mtok: 'USD per million reasoning tokens',
  per_request: 'USD per request',
  per_search_unit: 'USD per rerank search unit',
} as const;

export type PriceField = keyof typeof PRICE_FIELDS;

export type Prices = Partial<Record<PriceField, number>>;

export interface PriceOverride extends Prices {
  object: 'price_override';
  id: string;
  provider: string;
  model: string;
  workspace_id: string;
  /** ISO 8601 */
  created_at: string;
  /** ISO 8601 */
  last_updated_at: string;
}
