import { defineCheck } from './types';
import { letterCase, noParameters } from './letter-case';

/** `default.allLowercase`: no upper-case letter in the text. */
export const allLowercase = defineCheck({
  id: 'default.allLowercase',
  parameters: noParameters,
  run: (input) => letterCase(input.text, 'lower'),
});
