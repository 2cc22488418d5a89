import { proxyRoutes } from '../gateway/proxy';
import { namesAnyProvider } from '../shared/auth/managed-provider';
import { createHttpHandler } from '../shared/http/lambda-entry';
import { messageBatchesRoutes } from './message-batch-routes';
import { batchesRoutes } from './routes';

/** A raw provider key (`x-gateway-provider: openai` and the provider's own key) still reaches the provider's own Batches API. */
const rawProvider = (headers: Record<string, string>) => {
  const provider = headers['x-gateway-provider']?.trim();
  return Boolean(provider && !provider.startsWith('@'));
};

/**
 * `/v1/batches...` and Anthropic's `/v1/messages/batches...`: the batches endpoint group (one
 * Lambda). A managed provider, a virtual key or a config is run by the gateway (every line
 * through the pipeline); a raw provider key goes to that provider's own Batches API, as do
 * paths this group does not implement.
 */
export const routes = [...batchesRoutes, ...messageBatchesRoutes];
export const handler = createHttpHandler(routes, {
  passthrough: { routes: proxyRoutes, takes: (headers, routed) => rawProvider(headers) || (!routed && namesAnyProvider(headers)) },
});
