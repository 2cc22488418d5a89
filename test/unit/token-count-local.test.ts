import { describe, expect, it } from 'vitest';
import { encodingOf, estimateCount, IMAGE_TOKENS, isOpenAIModel, tokenizerCount } from '../../functions/gateway/token-count-local';

// The local counts' model rules and their fixed parts; the counts through the routes are in
// test/integration/token-count.test.ts.
describe('local token counts', () => {
  it('knows OpenAI model ids on any provider, and their encoding', () => {
    for (const model of ['gpt-4o-mini', 'gpt-5', 'o1', 'o3-mini', 'o4-mini', 'gpt-4.1', 'openai/gpt-4o', 'text-embedding-3-small', 'chatgpt-4o-latest'])
      expect(isOpenAIModel(model), model).toBe(true);
    for (const model of ['claude-sonnet-4-5', 'command-r', 'gemini-2.5-flash', 'llama-3.1-8b', 'o1ne', 'mistral-large'])
      expect(isOpenAIModel(model), model).toBe(false);
    for (const model of ['gpt-4', 'gpt-4-turbo', 'gpt-4-0613', 'gpt-3.5-turbo', 'text-embedding-ada-002', 'text-embedding-3-large'])
      expect(encodingOf(model), model).toBe('cl100k_base');
    for (const model of ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'gpt-4.5-preview', 'gpt-5', 'o3', 'openai/gpt-4o'])
      expect(encodingOf(model), model).toBe('o200k_base');
  });

  it("counts a special-token look-alike in a caller's text as text, and each image at a fixed price", async () => {
    // "<|endoftext|>" is plain text to the API: several tokens, never a refusal.
    const plain = await tokenizerCount({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Hello' }] });
    const lookalike = await tokenizerCount({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Hello <|endoftext|>' }] });
    expect(plain).toBe(8);
    expect(lookalike).toBeGreaterThan(plain + 1);
    const withImage = await tokenizerCount({
      model: 'gpt-4o',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Hello' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          ],
        },
      ],
    });
    expect(withImage).toBe(plain + IMAGE_TOKENS);
  });

  it('estimates a quarter of the characters, rounded up, plus 3 per message and 3 for the reply', () => {
    // "user" + "abcde" = 9 characters -> 3; one message: 3 + 3.
    expect(estimateCount({ model: 'm', messages: [{ role: 'user', content: 'abcde' }] })).toBe(9);
    const tool = { type: 'function' as const, function: { name: 'f', parameters: { type: 'object' } } };
    expect(estimateCount({ model: 'm', messages: [{ role: 'user', content: 'abcde' }], tools: [tool] })).toBeGreaterThan(9);
  });
});
