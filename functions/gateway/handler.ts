import { createHttpHandler } from '../shared/http/handler';
import type { GatewayRequest, Route } from '../shared/http/types';
import { speech, transcriptions, translations } from './audio';
import { chatCompletions } from './chat';
import { embeddings } from './embeddings';
import { proxyRoutes } from './proxy';

// Rare routes load on first use, so the cold start stays within its budget (test/infra/bundles.test.ts).
const listModels = (req: GatewayRequest) => import('./models').then((m) => m.listModels(req));
const messages = (req: GatewayRequest) => import('./messages').then((m) => m.messages(req));
const countMessageTokens = (req: GatewayRequest) => import('./messages').then((m) => m.countTokens(req));

export const routes: Route[] = [
  { method: 'POST', path: '/v1/chat/completions', scope: 'gateway', name: 'chat.completions', handler: chatCompletions },
  { method: 'POST', path: '/v1/messages', scope: 'gateway', name: 'messages', handler: messages },
  { method: 'POST', path: '/v1/messages/count_tokens', scope: 'gateway', name: 'messages.count_tokens', handler: countMessageTokens },
  { method: 'GET', path: '/v1/models', scope: 'gateway', name: 'models', handler: listModels },
  { method: 'POST', path: '/v1/embeddings', scope: 'gateway', name: 'embeddings', handler: embeddings },
  { method: 'POST', path: '/v1/audio/speech', scope: 'gateway', name: 'audio.speech', handler: speech },
  { method: 'POST', path: '/v1/audio/transcriptions', scope: 'gateway', name: 'audio.transcriptions', handler: transcriptions },
  { method: 'POST', path: '/v1/audio/translations', scope: 'gateway', name: 'audio.translations', handler: translations },
  ...proxyRoutes,
];

export const handler = createHttpHandler(routes);
