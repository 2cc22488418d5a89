import type { Route } from '../shared/http/types';
import { rerank } from './rerank';

/** The rerank endpoint group. */
export const rerankRoutes: Route[] = [{ method: 'POST', path: '/v1/rerank', scope: 'gateway', name: 'rerank', handler: rerank }];
