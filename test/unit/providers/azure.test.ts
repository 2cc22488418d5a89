import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../functions/shared/errors';
import { azureOpenAI } from '../../../functions/providers/azure-openai';
import { getAdapter } from '../../../functions/providers/registry';
import type { ChatRequest, ProviderTarget } from '../../../functions/providers/types';
import { contentOf, ctx, translateEveryWay } from './stream-helpers';

const target: ProviderTarget = {
  provider: 'azure-openai',
  apiKey: '0123456789abcdef0123456789abcdef',
  azure: { resourceName: 'my-resource', deploymentId: 'gpt4o-prod', apiVersion: '2024-10-21' },
};
const chat = azureOpenAI.chat!;
const hello: ChatRequest = { model: 'gpt-4o', messages: [{ role: 'user', content: 'Hello' }] };

function gatewayError(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('expected a GatewayError');
}

describe('azure-openai requests', () => {
  it('is registered under its slug', async () => {
    expect(await getAdapter('azure-openai')).toBe(azureOpenAI);
  });

  it('posts chat to the deployment URL with api-key and the body unchanged', () => {
    expect(chat.request(hello, target)).toEqual({
      url: 'https://my-resource.openai.azure.com/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21',
      method: 'POST',
      headers: { 'content-type': 'application/json', 'api-key': '0123456789abcdef0123456789abcdef' },
      body: JSON.stringify(hello),
    });
  });

  it('asks for stream usage (for the logs) and defaults the api-version', () => {
    const t: ProviderTarget = { ...target, azure: { resourceName: 'my-resource', deploymentId: 'gpt4o-prod' } };
    const req = chat.request({ ...hello, stream: true }, t);
    expect(req.url).toBe('https://my-resource.openai.azure.com/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21');
    expect(JSON.parse(req.body as string)).toEqual({ ...hello, stream: true, stream_options: { include_usage: true } });
    // Older api-versions do not know stream_options: the body stays as sent.
    const old = chat.request({ ...hello, stream: true }, { ...t, azure: { ...t.azure, apiVersion: '2024-06-01' } });
    expect(JSON.parse(old.body as string)).toEqual({ ...hello, stream: true });
  });

  it('uses the model as deployment when no deployment header is given', () => {
    const req = chat.request(hello, { ...target, azure: { resourceName: 'my-resource' } });
    expect(req.url).toBe('https://my-resource.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21');
  });

  it('sends an Entra ID token as Authorization: Bearer', () => {
    const jwt = 'eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJ4In0.c2lnbmF0dXJl';
    expect(azureOpenAI.authHeaders({ ...target, apiKey: jwt })).toEqual({ authorization: `Bearer ${jwt}` });
  });

  it('honours customHost (no resource needed) and merges forwarded headers, never x-gateway-*', () => {
    const t: ProviderTarget = {
      provider: 'azure-openai',
      apiKey: 'k',
      customHost: 'https://apim.example.com/openai/',
      azure: { deploymentId: 'dep' },
      forwardHeaders: { 'X-Trace': 't-1', 'x-gateway-api-key': 'secret', 'api-key': 'forged' },
    };
    const req = chat.request(hello, t);
    expect(req.url).toBe('https://apim.example.com/openai/deployments/dep/chat/completions?api-version=2024-10-21');
    expect(req.headers).toEqual({ 'x-trace': 't-1', 'content-type': 'application/json', 'api-key': 'k' });
    expect(azureOpenAI.baseUrl(t)).toBe('https://apim.example.com/openai');
  });

  it('builds embeddings, audio and proxy URLs', () => {
    const emb = azureOpenAI.embeddings!.request(
      { model: 'text-embedding-3-small', input: 'hi' },
      { ...target, azure: { ...target.azure, deploymentId: 'emb' } },
    );
    expect(emb.url).toBe('https://my-resource.openai.azure.com/openai/deployments/emb/embeddings?api-version=2024-10-21');
    expect(JSON.parse(emb.body as string)).toEqual({ model: 'text-embedding-3-small', input: 'hi' });
    expect(azureOpenAI.embeddings!.response).toBeUndefined();
    expect(azureOpenAI.audio!.url!('transcriptions', target)).toBe(
      'https://my-resource.openai.azure.com/openai/deployments/gpt4o-prod/audio/transcriptions?api-version=2024-10-21',
    );
    expect(azureOpenAI.baseUrl(target)).toBe('https://my-resource.openai.azure.com/openai');
  });

  it('rejects missing or unsafe settings with a 400 naming the header', () => {
    const missing = gatewayError(() => chat.request(hello, { provider: 'azure-openai', apiKey: 'k', azure: { deploymentId: 'd' } }));
    expect([missing.status, missing.param]).toEqual([400, 'x-gateway-azure-resource-name']);
    expect(missing.message).toContain('x-gateway-azure-resource-name');
    for (const resourceName of ['evil.com', 'a/b', 'x@169.254.169.254', 'res:80', '-bad']) {
      const err = gatewayError(() => azureOpenAI.baseUrl({ ...target, azure: { resourceName } }));
      expect([err.status, err.param]).toEqual([400, 'x-gateway-azure-resource-name']);
    }
    const dep = gatewayError(() => chat.request(hello, { ...target, azure: { ...target.azure, deploymentId: '../files' } }));
    expect(dep.param).toBe('x-gateway-azure-deployment-id');
    const noDep = gatewayError(() => chat.request({ ...hello, model: 'a/b' }, { ...target, azure: { resourceName: 'r' } }));
    expect(noDep.param).toBe('x-gateway-azure-deployment-id');
    const ver = gatewayError(() => chat.request(hello, { ...target, azure: { ...target.azure, apiVersion: '2024-10-21&x=1' } }));
    expect(ver.param).toBe('x-gateway-azure-api-version');
    const audio = gatewayError(() => azureOpenAI.audio!.url!('speech', { ...target, azure: { resourceName: 'r' } }));
    expect(audio.param).toBe('x-gateway-azure-deployment-id');
    const key = gatewayError(() => chat.request(hello, { ...target, apiKey: undefined }));
    expect([key.status, key.param]).toEqual([400, 'authorization']);
  });

  it('passes the completion through, extra Azure fields included', () => {
    const upstream = {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1,
      model: 'gpt-4o-2024-08-06',
      prompt_filter_results: [{ prompt_index: 0, content_filter_results: {} }],
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop', logprobs: null, content_filter_results: {} }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    };
    expect(chat.response(upstream, ctx())).toEqual(upstream);
  });
});

// Real Azure stream shape: an annotation-only first chunk (blank id/model, empty choices),
// content chunks with content_filter_results, an async-filter chunk without delta, the
// usage chunk, then [DONE].
const filter = '{"hate":{"filtered":false,"severity":"safe"}}';
const azureWire =
  `data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":${filter}}]}\r\n\r\n` +
  `data: {"choices":[{"content_filter_results":{},"delta":{"content":"","role":"assistant"},"finish_reason":null,"index":0,"logprobs":null}],"created":1741569952,"id":"chatcmpl-AZ1","model":"gpt-4o-2024-08-06","object":"chat.completion.chunk","system_fingerprint":"fp_1","usage":null}\r\n\r\n` +
  `data: {"choices":[{"content_filter_results":${filter},"delta":{"content":"Grüße "},"finish_reason":null,"index":0,"logprobs":null}],"created":1741569952,"id":"chatcmpl-AZ1","model":"gpt-4o-2024-08-06","object":"chat.completion.chunk","usage":null}\r\n\r\n` +
  `data: {"choices":[{"content_filter_results":{},"delta":{"content":"aus Köln"},"finish_reason":null,"index":0,"logprobs":null}],"created":1741569952,"id":"chatcmpl-AZ1","model":"gpt-4o-2024-08-06","object":"chat.completion.chunk","usage":null}\r\n\r\n` +
  `data: {"choices":[{"content_filter_offsets":{"check_offset":0,"start_offset":0,"end_offset":14},"content_filter_results":${filter},"index":0}],"created":0,"id":"","model":"","object":""}\r\n\r\n` +
  `data: {"choices":[{"content_filter_results":{},"delta":{},"finish_reason":"stop","index":0,"logprobs":null}],"created":1741569952,"id":"chatcmpl-AZ1","model":"gpt-4o-2024-08-06","object":"chat.completion.chunk","usage":null}\r\n\r\n` +
  `data: {"choices":[],"created":1741569952,"id":"chatcmpl-AZ1","model":"gpt-4o-2024-08-06","object":"chat.completion.chunk","usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}\r\n\r\n` +
  'data: [DONE]\r\n\r\n';

describe('azure-openai stream', () => {
  it('drops annotation-only chunks and hides the usage the caller did not ask for', () => {
    const out = translateEveryWay(() => chat.stream!(ctx()), azureWire, 'ü');
    expect(out.error).toBeUndefined();
    expect(out.chunks).toHaveLength(4);
    expect(contentOf(out.chunks)).toBe('Grüße aus Köln');
    expect(out.chunks.every((c) => c.id === 'chatcmpl-AZ1' && c.object === 'chat.completion.chunk' && !('usage' in c))).toBe(true);
    expect(out.chunks[0]!.choices[0]!.delta).toEqual({ content: '', role: 'assistant' });
    expect(out.chunks[1]!.choices[0]).toMatchObject({ content_filter_results: JSON.parse(filter) });
    expect(out.chunks[3]!.choices[0]!.finish_reason).toBe('stop');
    expect(out.usage).toEqual({ prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 });
  });

  it('keeps the usage chunk when asked for', () => {
    const out = translateEveryWay(() => chat.stream!(ctx({ includeUsage: true })), azureWire);
    expect(out.chunks).toHaveLength(5);
    expect(out.chunks[4]).toMatchObject({ choices: [], usage: { total_tokens: 13 } });
    expect(out.chunks.slice(0, 4).every((c) => c.usage === null)).toBe(true);
  });

  it('turns an in-stream error into a StreamError', () => {
    const wire =
      'data: {"choices":[{"delta":{"content":"Hi"},"finish_reason":null,"index":0}],"created":1,"id":"c","model":"m","object":"chat.completion.chunk"}\n\n' +
      'data: {"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}\n\n';
    const out = translateEveryWay(() => chat.stream!(ctx()), wire);
    expect(contentOf(out.chunks)).toBe('Hi');
    expect(out.error).toEqual({ status: 500, message: 'The server had an error', type: 'server_error', code: null });
  });
});
