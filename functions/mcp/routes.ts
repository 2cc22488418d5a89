import type { Route } from '../shared/http/types';
import { mcpServerRoutes } from './admin-routes';

export const mcpRoutes: Route[] = [...mcpServerRoutes];
