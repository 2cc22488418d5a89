import { createHttpHandler } from '../shared/http/handler';
import { apiKeyRoutes } from './api-keys';
import { configRoutes } from './configs';
import { providerRoutes } from './providers';
import { logRoutes } from './logs';
import { workspaceRoutes } from './workspaces';

export const handler = createHttpHandler([...workspaceRoutes, ...apiKeyRoutes, ...providerRoutes, ...configRoutes, ...logRoutes]);
