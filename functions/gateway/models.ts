import { config } from '../shared/config';
import { badRequest, GatewayError, upstreamError } from '../shared/errors';
import type { ConfigNode } from '../shared/gateway-config';
import { json, mergeHeaders } from '../shared/http/response';
import type { GatewayRequest, HttpResponse } from '../shared/http/types';
import { readBody, sendUpstream } from '../shared/net/http-client';
import { jsonGet, openAIModelList } from '../providers/_shared/openai-shape';
import type { ModelEntry, ProviderAdapter, ProviderTarget, UpstreamRequest } from '../providers/types';
import { translateUpstream } from './upstream-body';
import { parseGatewayOptions, responseHeadersFrom } from './headers';
import { requestFacts } from './request-log';
import { configLeaves, resolveConfig, resolveLeaf } from './target';

/** A model list larger than this is not a model list. */
const MAX_LIST_BYTES = 8 * 1024 * 1024;

type Listed =
  | { provider: string; models: ModelEntry[] }
  | { provider: string; failure: { status: number; headers: Record<string, string>; body: Buffer | string } };

function listRequest(adapter: ProviderAdapter, target: ProviderTarget): UpstreamRequest {
  if (adapter.models === false) {
    throw badRequest(
      `${adapter.name} has no model list the gateway can read; name its models as its documentation does.`,
      'x-gateway-provider',
      'unsupported_operation',
    );
  }
  return adapter.models
    ? adapter.models.request(target)
    : jsonGet(`${adapter.baseUrl(target).replace(/\/+$/, '')}/models`, adapter.authHeaders(target), target);
}

async function listOne(node: ConfigNode, workspaceId: string, timeoutMs: number): Promise<Listed> {
  const { adapter, target } = await resolveLeaf(node, workspaceId);
  const built = listRequest(adapter, target);
  const signed = adapter.sign ? await adapter.sign(built, target) : built;
  const res = await sendUpstream({ ...signed, timeoutMs, trustedHosts: config().trustedHosts });
  const body = await readBody(res.body, MAX_LIST_BYTES);
  if (res.status >= 400) return { provider: adapter.slug, failure: { status: res.status, headers: responseHeadersFrom(res.headers), body } };
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw upstreamError(`Provider '${adapter.slug}' returned a model list that is not valid JSON.`, 'invalid_upstream_response');
  }
  return {
    provider: adapter.slug,
    models: translateUpstream(adapter.slug, () => (adapter.models ? adapter.models.response(parsed, adapter) : openAIModelList(parsed, adapter))),
  };
}

/**
 * `GET /v1/models`: the model list of the provider the request names (header, managed
 * provider, config or the key's default config) in OpenAI's shape. For a config with
 * several targets, the union (each id once, first target first). A target that fails is
 * named in `x-gateway-models-unavailable`; when every target fails, the first failure is
 * answered as the provider sent it. Runs under the `requestLog` middleware.
 */
export async function listModels(req: GatewayRequest): Promise<HttpResponse> {
  const facts = requestFacts(req);
  const { timeoutMs } = parseGatewayOptions(req.headers);
  const { config: tree } = await resolveConfig(req);
  // A list covers every target, whatever the strategy would choose.
  const leaves = configLeaves(tree);
  const settled = await Promise.allSettled(
    leaves.map((leaf) =>
      listOne(leaf, req.auth.workspaceId, Math.min(timeoutMs ?? Infinity, leaf.request_timeout ?? Infinity, config().defaultUpstreamTimeoutMs)),
    ),
  );
  const results = settled.map((outcome, i): Listed => {
    if (outcome.status === 'fulfilled') return outcome.value;
    // One target: its error is the answer. Several: a target that cannot be reached is named, the rest still list.
    if (leaves.length === 1 || !(outcome.reason instanceof GatewayError)) throw outcome.reason;
    const provider = leaves[i]!.provider ?? leaves[i]!.virtual_key ?? 'unknown';
    return { provider, failure: { status: outcome.reason.status, headers: {}, body: JSON.stringify(outcome.reason.toBody()) } };
  });
  facts.provider = results[0]?.provider;
  const listed = results.filter((r): r is Extract<Listed, { models: ModelEntry[] }> => 'models' in r);
  const failed = results.filter((r): r is Extract<Listed, { failure: unknown }> => 'failure' in r);
  if (!listed.length) {
    const { status, headers, body } = failed[0]!.failure;
    facts.status = status;
    return { statusCode: status, headers: mergeHeaders(headers, { 'x-gateway-provider': failed[0]!.provider }), body };
  }
  const seen = new Set<string>();
  const data: ModelEntry[] = [];
  for (const { models } of listed) {
    for (const model of models) {
      if (seen.has(model.id)) continue;
      seen.add(model.id);
      data.push(model);
    }
  }
  const headers: Record<string, string> = { 'x-gateway-provider': [...new Set(listed.map((r) => r.provider))].join(',') };
  if (failed.length) headers['x-gateway-models-unavailable'] = [...new Set(failed.map((r) => r.provider))].join(',');
  facts.status = 200;
  return json(200, { object: 'list', data }, headers);
}
