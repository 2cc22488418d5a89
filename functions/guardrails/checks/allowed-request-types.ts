import { z } from '../../shared/validation';
import { defineCheck } from './types';
import { stringList } from './util';

/**
 * The request type of a route: a type name is kept as is; a `/v1/...` path maps to
 * `chat`, `completions`, `embeddings`, `audio`, `images`, `rerank`, `prompts`,
 * `assistants`, `fine_tuning`, and anything else to `proxy`.
 */
const PATH_TYPES: Array<[RegExp, string]> = [
  [/^\/v1\/chat\/completions\/?$/, 'chat'],
  [/^\/v1\/completions\/?$/, 'completions'],
  [/^\/v1\/embeddings\/?$/, 'embeddings'],
  [/^\/v1\/audio\//, 'audio'],
  [/^\/v1\/images\//, 'images'],
  [/^\/v1\/rerank\/?$/, 'rerank'],
  [/^\/v1\/prompts\//, 'prompts'],
  [/^\/v1\/(threads|assistants)\b/, 'assistants'],
  [/^\/v1\/fine_tuning\//, 'fine_tuning'],
];

export function requestTypeOf(route: string): string {
  if (!route.startsWith('/')) return route;
  const path = route.split('?')[0]!;
  return PATH_TYPES.find(([re]) => re.test(path))?.[1] ?? 'proxy';
}

/** `default.allowedRequestTypes`: the request type is one of `allowedTypes`. */
export const allowedRequestTypes = defineCheck({
  id: 'default.allowedRequestTypes',
  parameters: z.strictObject({ allowedTypes: stringList(50) }),
  run(input, params) {
    const type = requestTypeOf(input.request.route);
    const verdict = params.allowedTypes.includes(type);
    return { verdict, explanation: verdict ? `Request type '${type}' is allowed.` : `Request type '${type}' is not allowed.`, data: { type } };
  },
});
