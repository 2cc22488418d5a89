import { proxyUnroutedOrPerRequest } from '../gateway/proxy';
import { createHttpHandler } from '../shared/http/lambda-entry';
import { filesRoutes } from './routes';

/** `/v1/files...` and `/v1/uploads...`: the files endpoint group (one Lambda); a raw provider key still reaches the provider's own Files API. */
export const routes = filesRoutes;
export const handler = createHttpHandler(routes, { passthrough: proxyUnroutedOrPerRequest });
