import { describe, expect, it } from 'vitest';
import { applyParamRules } from '../../../functions/providers/_shared/param-rules';
import type { ChatRequest, ParamRule } from '../../../functions/providers/types';

const base: ChatRequest = { model: 'm-1', messages: [{ role: 'user', content: 'hi', name: 'alice' }] };
const rules: ParamRule[] = [
  { source: 'https://example.test/a', refuse: ['logit_bias', 'n', 'stop'], drop: ['presence_penalty', 'messages[].name'] },
  { source: 'https://example.test/b', rename: { seed: 'random_seed', max_completion_tokens: 'max_tokens' } },
  { source: 'https://example.test/c', models: /^reasoner/, drop: ['temperature'] },
];

describe('applyParamRules', () => {
  it('refuses a field that asks for something with a 400 naming it', () => {
    for (const [field, value] of [
      ['logit_bias', { '1': 5 }],
      ['n', 3],
      ['stop', 'END'],
    ] as const) {
      expect(() => applyParamRules({ ...base, [field]: value }, rules, 'P')).toThrow(expect.objectContaining({ status: 400, param: field }));
    }
  });

  it('drops inert values of refused fields, dropped fields and message names', () => {
    const out = applyParamRules({ ...base, n: 1, logit_bias: {}, stop: [], presence_penalty: 1 }, rules, 'P');
    expect(out).toEqual({ model: 'm-1', messages: [{ role: 'user', content: 'hi' }] });
  });

  it('renames, keeping a value already set under the provider name', () => {
    expect(applyParamRules({ ...base, seed: 7, max_completion_tokens: 9, max_tokens: 5 }, rules, 'P')).toMatchObject({ random_seed: 7, max_tokens: 5 });
    expect(applyParamRules({ ...base, seed: 7 }, rules, 'P')).not.toHaveProperty('seed');
  });

  it('applies a model-scoped rule only to matching models', () => {
    expect(applyParamRules({ ...base, temperature: 0.2 }, rules, 'P')).toMatchObject({ temperature: 0.2 });
    expect(applyParamRules({ ...base, model: 'reasoner-2', temperature: 0.2 }, rules, 'P')).not.toHaveProperty('temperature');
  });

  it('leaves the caller body untouched', () => {
    const body = { ...base, presence_penalty: 1 };
    applyParamRules(body, rules, 'P');
    expect(body.presence_penalty).toBe(1);
    expect(body.messages[0]).toHaveProperty('name', 'alice');
  });
});
