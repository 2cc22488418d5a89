import { proxyUnroutedOrPerRequest } from '../gateway/proxy';
import { createHttpHandler } from '../shared/http/lambda-entry';
import { assistantRoutes } from './routes/assistants';
import { messageRoutes } from './routes/messages';
import { runRoutes } from './routes/runs';
import { threadRoutes } from './routes/threads';

/** Assistants v2: `/v1/assistants...` and `/v1/threads...` (threads, messages, runs, steps). */
export const routes = [...assistantRoutes, ...threadRoutes, ...messageRoutes, ...runRoutes];
export const handler = createHttpHandler(routes, { passthrough: proxyUnroutedOrPerRequest });
