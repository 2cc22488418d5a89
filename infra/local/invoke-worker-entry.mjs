// Entry of a local worker thread (infra/local/worker-pool.ts): TypeScript through tsx, then
// the worker itself. Plain JavaScript because a worker thread starts without the parent's
// loaders.
import { register } from 'tsx/esm/api';

register();
await import('./invoke-worker.ts');
