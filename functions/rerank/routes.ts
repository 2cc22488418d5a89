import type { Route } from '../shared/http/types';
import { logged } from '../gateway/request-log';
import { rerank } from './rerank';
import { idempotency } from '../shared/http/idempotency';

/** The rerank endpoint group. */
export const rerankRoutes: Route[] = [{ method: 'POST', path: '/v1/rerank', access: 'gateway', ...logged('rerank', idempotency), handler: rerank }];
