/** One HTTP request to a provider, fully built (and signed when the provider signs). */
export interface UpstreamRequest {
  url: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  headers: Record<string, string>;
  body?: Buffer | string;
}
