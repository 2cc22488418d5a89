import type { RequestSpec } from './load';

/** URLs of the fake upstreams (bench/upstream.ts). */
export interface Upstreams {
  openai0: string;
  openai50: string;
  openai2000: string;
  anthropic0: string;
  anthropic50: string;
  openaiSlow: string;
  openaiCadence: string;
  cohere0: string;
}

export type Latency = 0 | 50;
export const PROVIDER_KEY = 'sk-bench-provider-key-0123456789';
export const ANTHROPIC_KEY = 'sk-ant-bench-provider-key-0123456789';

/** A small, typical chat request (12 words in, the fake answers `echo: …`). */
const PROMPT = 'Summarise the benefits of a gateway in front of model providers in one line';
const openaiBody = (stream: boolean) =>
  JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: PROMPT }], ...(stream ? { stream: true } : {}) });
const anthropicBody = (stream: boolean) =>
  JSON.stringify({ model: 'claude-3-5-haiku-latest', max_tokens: 256, messages: [{ role: 'user', content: PROMPT }], ...(stream ? { stream: true } : {}) });

export interface Targets {
  upstreams: Upstreams;
  /** Bare proxy base URLs, one per upstream it fronts. */
  bare: { openai0: string; openai50: string };
  gateway: string;
  key: string;
  limitedKey: string;
  /** `BenchSetup.full` (bench/lib/admin.ts): needed by `gateway-chat-full` only. */
  full?: Record<Latency, { headers: Record<string, string> }>;
}

export const SCENARIOS = [
  'direct-openai',
  'direct-anthropic',
  'bare-proxy',
  'gateway-proxy',
  'gateway-chat-openai',
  'gateway-chat-anthropic',
  'gateway-proxy-ratelimit',
  'gateway-chat-full',
] as const;

/**
 * Streamed only (the streams phase, issue 38 item 2): the Responses and Messages routes,
 * each translated to a provider of the other dialect, and Messages passed to Anthropic as
 * it is. Responses on OpenAI is passed through like the generic proxy (gateway-proxy).
 */
export const STREAM_ONLY_SCENARIOS = ['gateway-responses-anthropic', 'gateway-messages-openai', 'gateway-messages-anthropic'] as const;
export type Scenario = (typeof SCENARIOS)[number] | (typeof STREAM_ONLY_SCENARIOS)[number];

/** Which direct scenario a scenario's added latency is measured against (same upstream call). */
export const BASELINE: Record<Scenario, Scenario> = {
  'direct-openai': 'direct-openai',
  'direct-anthropic': 'direct-anthropic',
  'bare-proxy': 'direct-openai',
  'gateway-proxy': 'direct-openai',
  'gateway-chat-openai': 'direct-openai',
  'gateway-chat-anthropic': 'direct-anthropic',
  'gateway-proxy-ratelimit': 'direct-openai',
  'gateway-chat-full': 'direct-openai',
  'gateway-responses-anthropic': 'direct-anthropic',
  'gateway-messages-openai': 'direct-openai',
  'gateway-messages-anthropic': 'direct-anthropic',
};

export const DESCRIPTION: Record<Scenario, string> = {
  'direct-openai': 'client -> fake OpenAI (POST /v1/chat/completions)',
  'direct-anthropic': 'client -> fake Anthropic (POST /v1/messages)',
  'bare-proxy': 'client -> bare node:http pass-through proxy -> fake OpenAI (the floor)',
  'gateway-proxy':
    'client -> gateway generic proxy (POST /v1/v1/chat/completions, custom host = fake root, so the upstream URL is exactly the direct one) -> fake OpenAI',
  'gateway-chat-openai': 'client -> gateway unified chat (POST /v1/chat/completions, x-gateway-provider: openai) -> fake OpenAI',
  'gateway-chat-anthropic': 'client -> gateway unified chat, OpenAI <-> Anthropic translation -> fake Anthropic',
  'gateway-proxy-ratelimit': 'as gateway-proxy, with a key under one requests/minute rate-limit policy (never refuses)',
  'gateway-chat-full':
    'client -> gateway unified chat, every hot-path feature on: saved config (x-gateway-config) targeting a managed OpenAI provider, a key under a requests/min policy and a budget (neither refuses), a price override -> fake OpenAI',
  'gateway-responses-anthropic': 'client -> gateway Responses API (POST /v1/responses), Responses <-> Anthropic Messages translation -> fake Anthropic',
  'gateway-messages-openai': 'client -> gateway Messages API (POST /v1/messages), Anthropic Messages <-> OpenAI chat translation -> fake OpenAI',
  'gateway-messages-anthropic': 'client -> gateway Messages API (POST /v1/messages, x-gateway-provider: anthropic), passed to the fake Anthropic as it is',
};

const responsesBody = (model: string, stream: boolean) => JSON.stringify({ model, input: PROMPT, max_output_tokens: 256, ...(stream ? { stream: true } : {}) });

/** The request a scenario repeats, JSON (`stream` false) or SSE. */
export function requestFor(s: Scenario, t: Targets, latency: Latency, stream = false): RequestSpec {
  const openai = latency === 0 ? t.upstreams.openai0 : t.upstreams.openai50;
  const anthropic = latency === 0 ? t.upstreams.anthropic0 : t.upstreams.anthropic50;
  const json = { 'content-type': 'application/json' };
  const providerAuth = { authorization: `Bearer ${PROVIDER_KEY}` };
  switch (s) {
    case 'direct-openai':
      return { url: `${openai}/v1/chat/completions`, method: 'POST', headers: { ...json, ...providerAuth }, body: openaiBody(stream) };
    case 'direct-anthropic':
      return {
        url: `${anthropic}/v1/messages`,
        method: 'POST',
        headers: { ...json, 'x-api-key': ANTHROPIC_KEY, 'anthropic-version': '2023-06-01' },
        body: anthropicBody(stream),
      };
    case 'bare-proxy':
      return {
        url: `${latency === 0 ? t.bare.openai0 : t.bare.openai50}/v1/chat/completions`,
        method: 'POST',
        headers: { ...json, ...providerAuth },
        body: openaiBody(stream),
      };
    case 'gateway-proxy':
    case 'gateway-proxy-ratelimit':
      return {
        url: `${t.gateway}/v1/v1/chat/completions`,
        method: 'POST',
        headers: {
          ...json,
          ...providerAuth,
          'x-gateway-api-key': s === 'gateway-proxy' ? t.key : t.limitedKey,
          'x-gateway-provider': 'openai',
          'x-gateway-custom-host': openai,
        },
        body: openaiBody(stream),
      };
    case 'gateway-chat-openai':
      return {
        url: `${t.gateway}/v1/chat/completions`,
        method: 'POST',
        headers: { ...json, ...providerAuth, 'x-gateway-api-key': t.key, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${openai}/v1` },
        body: openaiBody(stream),
      };
    case 'gateway-chat-anthropic':
      return {
        url: `${t.gateway}/v1/chat/completions`,
        method: 'POST',
        headers: {
          ...json,
          authorization: `Bearer ${ANTHROPIC_KEY}`,
          'x-gateway-api-key': t.key,
          'x-gateway-provider': 'anthropic',
          'x-gateway-custom-host': `${anthropic}/v1`,
        },
        body: openaiBody(stream),
      };
    case 'gateway-responses-anthropic':
    case 'gateway-messages-anthropic':
      return {
        url: `${t.gateway}/v1/${s === 'gateway-responses-anthropic' ? 'responses' : 'messages'}`,
        method: 'POST',
        headers: {
          ...json,
          authorization: `Bearer ${ANTHROPIC_KEY}`,
          'anthropic-version': '2023-06-01',
          'x-gateway-api-key': t.key,
          'x-gateway-provider': 'anthropic',
          'x-gateway-custom-host': `${anthropic}/v1`,
        },
        body: s === 'gateway-responses-anthropic' ? responsesBody('claude-3-5-haiku-latest', stream) : anthropicBody(stream),
      };
    case 'gateway-messages-openai':
      return {
        url: `${t.gateway}/v1/messages`,
        method: 'POST',
        headers: {
          ...json,
          ...providerAuth,
          'anthropic-version': '2023-06-01',
          'x-gateway-api-key': t.key,
          'x-gateway-provider': 'openai',
          'x-gateway-custom-host': `${openai}/v1`,
        },
        body: JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 256, messages: [{ role: 'user', content: PROMPT }], ...(stream ? { stream: true } : {}) }),
      };
    case 'gateway-chat-full': {
      if (!t.full) throw new Error('gateway-chat-full needs setUpGateway(url, adminKey, upstreams)');
      return {
        url: `${t.gateway}/v1/chat/completions`,
        method: 'POST',
        headers: { ...t.full[latency].headers },
        body: openaiBody(stream),
      };
    }
  }
}
