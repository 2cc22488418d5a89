import { z } from '../../shared/validation';
import type { CheckResult } from './types';

/** Shared by allUppercase / allLowercase: every cased letter is in the wanted case. */
export const noParameters = z.strictObject({});

export function letterCase(text: string, want: 'upper' | 'lower'): CheckResult {
  const wrong = [...text].filter((ch) => (want === 'upper' ? ch !== ch.toUpperCase() : ch !== ch.toLowerCase())).length;
  return {
    verdict: wrong === 0,
    explanation: wrong === 0 ? `All letters are ${want}case.` : `${wrong} letters are not ${want}case.`,
  };
}
