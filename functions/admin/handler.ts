import { createHttpHandler } from '../shared/http/handler';
import { workspaceRoutes } from './workspaces';

export const handler = createHttpHandler([...workspaceRoutes]);
