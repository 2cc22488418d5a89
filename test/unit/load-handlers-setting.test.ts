import { describe, expect, it } from 'vitest';
import { loadHandlersFrom } from '../../infra/local/server';

describe('GATEWAY_LOAD_HANDLERS', () => {
  it('is at-start unless set to on-first-use', () => {
    expect(loadHandlersFrom(undefined)).toBe('at-start');
    expect(loadHandlersFrom('')).toBe('at-start');
    expect(loadHandlersFrom('at-start')).toBe('at-start');
    expect(loadHandlersFrom('on-first-use')).toBe('on-first-use');
  });

  it('refuses any other value by name, before anything starts', () => {
    expect(() => loadHandlersFrom('lazy')).toThrow("GATEWAY_LOAD_HANDLERS must be 'at-start' or 'on-first-use'; got 'lazy'.");
  });
});
