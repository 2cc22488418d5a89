import { createHttpHandler } from '../shared/http/lambda-entry';
import type { GatewayRequest, Route } from '../shared/http/types';
import { speech, transcriptions, translations } from './audio';
import { chatCompletions } from './chat';
import { embeddings } from './embeddings';
import { proxyRoutes } from './proxy';

// Rare routes load on first use, so the cold start stays within its budget (test/infra/bundles.test.ts).
const listModels = (req: GatewayRequest) => import('./models').then((m) => m.listModels(req));

export const routes: Route[] = [
  { method: 'POST', path: '/v1/chat/completions', scope: 'gateway', name: 'chat.completions', handler: chatCompletions },
  { method: 'GET', path: '/v1/models', scope: 'gateway', name: 'models', handler: listModels },
  { method: 'POST', path: '/v1/embeddings', scope: 'gateway', name: 'embeddings', handler: embeddings },
  { method: 'POST', path: '/v1/audio/speech', scope: 'gateway', name: 'audio.speech', handler: speech },
  { method: 'POST', path: '/v1/audio/transcriptions', scope: 'gateway', name: 'audio.transcriptions', handler: transcriptions },
  { method: 'POST', path: '/v1/audio/translations', scope: 'gateway', name: 'audio.translations', handler: translations },
  ...proxyRoutes,
];

export const handler = createHttpHandler(routes);
