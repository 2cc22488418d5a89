import { describe, expect, it } from 'vitest';
import { getAdapter } from '../../../functions/providers/registry';
import { PROVIDER_SLUGS } from '../../../functions/shared/provider-table';
import { buildHeaders, resolveBase } from '../../../functions/providers/_shared/openai-shape';

describe('registry', () => {
  it('finds every adapter under its own slug (rare native ones loaded on first use)', async () => {
    for (const slug of PROVIDER_SLUGS) expect((await getAdapter(slug))?.slug).toBe(slug);
    expect(PROVIDER_SLUGS).toEqual(
      expect.arrayContaining([
        'openai',
        'anthropic',
        'cohere',
        'mistral-ai',
        'groq',
        'together-ai',
        'deepseek',
        'fireworks-ai',
        'openrouter',
        'ollama',
        'jina',
        'voyage',
        'pinecone',
      ]),
    );
  });

  it('knows nothing else, including object prototype names', async () => {
    for (const slug of ['nope', '__proto__', 'constructor', 'toString']) expect(await getAdapter(slug)).toBeUndefined();
  });
});

describe('shared target rules', () => {
  it('strips trailing slashes from a custom host', () => {
    expect(resolveBase({ provider: 'openai', customHost: 'http://10.0.0.1:8080/v1///' }, 'https://x')).toBe('http://10.0.0.1:8080/v1');
    expect(resolveBase({ provider: 'openai' }, 'https://api.openai.com/v1')).toBe('https://api.openai.com/v1');
  });

  it('lower-cases header names, keeps the adapter headers over forwarded ones, drops gateway and hop-by-hop ones', () => {
    expect(
      buildHeaders(
        { Authorization: 'Bearer own', 'x-gateway-leak': 'no' },
        {
          provider: 'openai',
          forwardHeaders: { AUTHORIZATION: 'Bearer theirs', 'X-Gateway-Config': 'c', 'Content-Length': '9', 'X-Custom': 'yes' },
        },
      ),
    ).toEqual({ authorization: 'Bearer own', 'x-custom': 'yes' });
  });
});
