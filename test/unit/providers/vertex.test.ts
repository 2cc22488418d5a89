import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../functions/shared/errors';
import { vertexAI } from '../../../functions/providers/vertex-ai';
import { getAdapter } from '../../../functions/providers/registry';
import type { ChatRequest, ProviderTarget } from '../../../functions/providers/types';
import { contentOf, ctx, translateEveryWay } from './stream-helpers';

const target: ProviderTarget = { provider: 'vertex-ai', apiKey: 'ya29.token', vertex: { projectId: 'my-project', region: 'us-central1' } };
const chat = vertexAI.chat!;
const hello: ChatRequest = { model: 'gemini-2.0-flash', messages: [{ role: 'user', content: 'Hello' }] };
const modelPath = 'publishers/google/models/gemini-2.0-flash';

function gatewayError(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('expected a GatewayError');
}

describe('vertex-ai requests', () => {
  it('is registered under its slug', async () => {
    expect(await getAdapter('vertex-ai')).toBe(vertexAI);
  });

  it('posts to the regional publisher model URL with a Bearer token', () => {
    expect(chat.request(hello, target)).toEqual({
      url: `https://us-central1-aiplatform.googleapis.com/v1/projects/my-project/locations/us-central1/${modelPath}:generateContent`,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer ya29.token' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'Hello' }] }] }),
    });
    expect(chat.request({ ...hello, stream: true }, target).url).toBe(
      `https://us-central1-aiplatform.googleapis.com/v1/projects/my-project/locations/us-central1/${modelPath}:streamGenerateContent?alt=sse`,
    );
  });

  it('uses aiplatform.googleapis.com for the global region', () => {
    const t = { ...target, vertex: { projectId: 'my-project', region: 'global' } };
    expect(chat.request(hello, t).url).toBe(`https://aiplatform.googleapis.com/v1/projects/my-project/locations/global/${modelPath}:generateContent`);
    expect(vertexAI.baseUrl(t)).toBe('https://aiplatform.googleapis.com/v1/projects/my-project/locations/global');
  });

  it('accepts the model as a full resource name (project and region come from it) or publisher path', () => {
    const full = chat.request(
      { ...hello, model: 'projects/other-proj/locations/europe-west4/publishers/google/models/gemini-2.5-pro' },
      { provider: 'vertex-ai', apiKey: 't' },
    );
    expect(full.url).toBe(
      'https://europe-west4-aiplatform.googleapis.com/v1/projects/other-proj/locations/europe-west4/publishers/google/models/gemini-2.5-pro:generateContent',
    );
    const publisher = chat.request({ ...hello, model: 'publishers/google/models/gemini-2.0-flash-001' }, target);
    expect(publisher.url).toBe(
      'https://us-central1-aiplatform.googleapis.com/v1/projects/my-project/locations/us-central1/publishers/google/models/gemini-2.0-flash-001:generateContent',
    );
    const tuned = chat.request({ ...hello, model: 'projects/123456789/locations/us-east5/endpoints/987' }, { provider: 'vertex-ai', apiKey: 't' });
    expect(tuned.url).toBe('https://us-east5-aiplatform.googleapis.com/v1/projects/123456789/locations/us-east5/endpoints/987:generateContent');
  });

  it('sets a role on every content, tool results included', () => {
    const body = JSON.parse(
      chat.request(
        {
          model: 'gemini-2.0-flash',
          messages: [
            { role: 'system', content: 'Be brief.' },
            { role: 'user', content: 'Weather?' },
            { role: 'assistant', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
            { role: 'tool', tool_call_id: 'call_1', content: 'Sunny' },
          ],
        },
        target,
      ).body as string,
    );
    expect(body.contents.map((c: { role: string }) => c.role)).toEqual(['user', 'model', 'user']);
    expect(body.contents[2].parts).toEqual([{ functionResponse: { name: 'get_weather', response: { content: 'Sunny' } } }]);
    expect(body.systemInstruction).toEqual({ parts: [{ text: 'Be brief.' }] });
  });

  it('rejects missing or unsafe settings with a 400 naming the header', () => {
    const noProject = gatewayError(() => chat.request(hello, { provider: 'vertex-ai', apiKey: 't', vertex: { region: 'us-central1' } }));
    expect([noProject.status, noProject.param]).toEqual([400, 'x-gateway-vertex-project-id']);
    expect(noProject.message).toContain('x-gateway-vertex-project-id');
    const noRegion = gatewayError(() => vertexAI.baseUrl({ provider: 'vertex-ai', apiKey: 't', vertex: { projectId: 'p-123456' } }));
    expect([noRegion.status, noRegion.param]).toEqual([400, 'x-gateway-vertex-region']);
    for (const region of ['evil.com/', 'us-central1.attacker.net', 'a@b', 'US_CENTRAL1']) {
      expect(gatewayError(() => chat.request(hello, { ...target, vertex: { projectId: 'my-project', region } })).param).toBe('x-gateway-vertex-region');
    }
    for (const projectId of ['../x', 'a/b', 'proj?x=1']) {
      expect(gatewayError(() => chat.request(hello, { ...target, vertex: { projectId, region: 'us-central1' } })).param).toBe('x-gateway-vertex-project-id');
    }
    const viaModel = gatewayError(() => chat.request({ ...hello, model: 'projects/p-1/locations/evil.com#/publishers/google/models/x' }, target));
    expect(viaModel.param).toBe('model');
    const regionInModel = gatewayError(() => chat.request({ ...hello, model: 'projects/my-proj/locations/x.evil/publishers/google/models/m' }, target));
    expect(regionInModel.param).toBe('model');
    const partner = gatewayError(() => chat.request({ ...hello, model: 'publishers/anthropic/models/claude-sonnet-4' }, target));
    expect([partner.param, partner.message.includes('generic proxy')]).toEqual(['model', true]);
    expect(gatewayError(() => chat.request({ ...hello, model: 'gemini/../../x' }, target)).param).toBe('model');
    expect(gatewayError(() => chat.request(hello, { ...target, apiKey: undefined })).param).toBe('authorization');
  });

  it('honours customHost for the scheme, host and /v1 and builds the proxy base URL', () => {
    const t = { ...target, customHost: 'https://vertex-psc.internal.example/v1/' };
    expect(chat.request(hello, t).url).toBe(`https://vertex-psc.internal.example/v1/projects/my-project/locations/us-central1/${modelPath}:generateContent`);
    expect(vertexAI.baseUrl(target)).toBe('https://us-central1-aiplatform.googleapis.com/v1/projects/my-project/locations/us-central1');
  });
});

describe('vertex-ai responses and stream', () => {
  it('maps the response like Gemini (createTime and trafficType ignored)', () => {
    const out = chat.response(
      {
        candidates: [{ content: { role: 'model', parts: [{ text: 'Hi' }] }, finishReason: 'MAX_TOKENS' }],
        usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4, trafficType: 'ON_DEMAND' },
        createTime: '2025-01-01T00:00:00Z',
        responseId: 'v-1',
      },
      ctx(),
    );
    expect(out.choices[0]).toEqual({ index: 0, message: { role: 'assistant', content: 'Hi', refusal: null }, logprobs: null, finish_reason: 'length' });
    expect(out.usage?.total_tokens).toBe(4);
  });

  it('translates the \\r\\n\\r\\n-separated Vertex stream', () => {
    const wire =
      'data: {"candidates": [{"content": {"role": "model","parts": [{"text": "Hel"}]}}],"usageMetadata": {"trafficType": "ON_DEMAND"},"modelVersion": "gemini-2.0-flash","createTime": "2025-01-01T00:00:00.000Z","responseId": "x"}\r\n\r\n' +
      'data: {"candidates": [{"content": {"role": "model","parts": [{"text": "lo"}]},"finishReason": "STOP"}],"usageMetadata": {"promptTokenCount": 2,"candidatesTokenCount": 2,"totalTokenCount": 4,"trafficType": "ON_DEMAND"}}\r\n\r\n';
    const out = translateEveryWay(() => chat.stream!(ctx({ includeUsage: true })), wire);
    expect(contentOf(out.chunks)).toBe('Hello');
    expect(out.chunks.map((c) => (c.choices.length ? c.choices[0]!.finish_reason : 'usage'))).toEqual([null, null, 'stop', 'usage']);
    expect(out.chunks.at(-1)!.usage).toMatchObject({ prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 });
  });
});

describe('vertex-ai embeddings (:predict)', () => {
  it('builds the predict request and maps predictions', () => {
    const emb = vertexAI.embeddings!;
    const req = emb.request({ model: 'text-embedding-005', input: ['a', 'b'], dimensions: 2 }, target);
    expect(req.url).toBe(
      'https://us-central1-aiplatform.googleapis.com/v1/projects/my-project/locations/us-central1/publishers/google/models/text-embedding-005:predict',
    );
    expect(JSON.parse(req.body as string)).toEqual({ instances: [{ content: 'a' }, { content: 'b' }], parameters: { outputDimensionality: 2 } });
    const out = emb.response!(
      {
        predictions: [
          { embeddings: { values: [0.1, 0.2], statistics: { token_count: 1, truncated: false } } },
          { embeddings: { values: [0.3, 0.4], statistics: { token_count: 2, truncated: false } } },
        ],
      },
      ctx({ model: 'text-embedding-005' }),
    );
    expect(out).toEqual({
      object: 'list',
      data: [
        { object: 'embedding', index: 0, embedding: [0.1, 0.2] },
        { object: 'embedding', index: 1, embedding: [0.3, 0.4] },
      ],
      model: 'text-embedding-005',
      usage: { prompt_tokens: 3, total_tokens: 3 },
    });
  });
});
