import { createHttpHandler } from '../shared/http/lambda-entry';
import { apiKeyRoutes } from './api-keys';
import { configRoutes } from './configs';
import { providerRoutes } from './providers';
import { logRoutes } from './logs';
import { openApiRoutes } from './openapi';
import { workspaceRoutes } from './workspaces';
import { spendRoutes } from '../spend/routes';
import { sessionRoutes } from '../console/session-routes';
import { ssoRoutes } from '../console/sso/routes';
import { consoleRoutes } from '../console/serve';

/** Every route of the admin group (also read by the OpenAPI test). */
export const routes = [
  ...workspaceRoutes,
  ...apiKeyRoutes,
  ...providerRoutes,
  ...configRoutes,
  ...logRoutes,
  ...spendRoutes,
  ...openApiRoutes,
  ...sessionRoutes,
  ...ssoRoutes,
];
/** The group also serves the console's files (`/console/`), which are not API operations. */
export const handler = createHttpHandler([...routes, ...consoleRoutes]);
