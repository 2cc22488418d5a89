import { proxyUnroutedOrPerRequest } from '../gateway/proxy';
import { createHttpHandler } from '../shared/http/handler';
import { assistantRoutes } from './assistants-routes';
import { messageRoutes } from './messages-routes';
import { runRoutes } from './runs-routes';
import { threadRoutes } from './threads-routes';

/** Assistants v2: `/v1/assistants...` and `/v1/threads...` (threads, messages, runs, steps). */
export const routes = [...assistantRoutes, ...threadRoutes, ...messageRoutes, ...runRoutes];
export const handler = createHttpHandler(routes, { passthrough: proxyUnroutedOrPerRequest });
