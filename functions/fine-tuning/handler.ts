import { proxyUnroutedOrPerRequest } from '../gateway/proxy';
import { createHttpHandler } from '../shared/http/lambda-entry';
import { fineTuningRoutes } from './routes';

/** `/v1/fine_tuning/jobs...`: the fine-tuning endpoint group (one Lambda). */
export const routes = fineTuningRoutes;
export const handler = createHttpHandler(routes, { passthrough: proxyUnroutedOrPerRequest });
