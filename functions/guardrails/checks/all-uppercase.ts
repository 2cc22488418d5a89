import { defineCheck } from './types';
import { letterCase, noParameters } from './letter-case';

/** `default.allUppercase`: no lower-case letter in the text. */
export const allUppercase = defineCheck({
  id: 'default.allUppercase',
  parameters: noParameters,
  run: (input) => letterCase(input.text, 'upper'),
});
