import { badRequest } from '../../shared/errors';
import type { ChatRequest } from '../types';

/**
 * Chat fields whose loss would change what the caller gets back (more choices, log
 * probabilities, token bias): a provider with no equivalent refuses them with a 400 naming
 * the field rather than dropping them. What providers drop instead is listed in the
 * table of translated parameters of docs/usage.md ("Translated providers").
 */
export function refuseUnhonoured(body: ChatRequest, providerName: string): void {
  refuseNonFunctionTools(body, providerName);
  if (typeof body.n === 'number' && body.n > 1) throw badRequest(`${providerName} returns one choice per request: \`n\` must be 1.`, 'n');
  if (body.logprobs === true) throw badRequest(`${providerName} does not return log probabilities: remove \`logprobs\`.`, 'logprobs', 'unsupported_parameter');
  if (typeof body.top_logprobs === 'number')
    throw badRequest(`${providerName} does not return log probabilities: remove \`top_logprobs\`.`, 'top_logprobs', 'unsupported_parameter');
  const bias = body.logit_bias;
  if (bias && typeof bias === 'object' && Object.keys(bias).length)
    throw badRequest(`${providerName} has no logit bias: remove \`logit_bias\`.`, 'logit_bias', 'unsupported_parameter');
}

/**
 * The translators read `function.name` of every tool and of a forced tool choice. Other tool
 * types (OpenAI's custom tools) pass the gateway's schema for the providers that take them
 * as they are; a provider the gateway translates for refuses them with a 400.
 */
export function refuseNonFunctionTools(body: ChatRequest, providerName: string): void {
  body.tools?.forEach((tool, i) => {
    if (!tool.function)
      throw badRequest(`${providerName} takes function tools only: tools[${i}] is of type '${String(tool.type)}'.`, `tools[${i}].type`, 'unsupported_tool');
  });
  const choice = body.tool_choice;
  if (choice && typeof choice === 'object' && !choice.function) {
    throw badRequest(
      `${providerName} can force a function tool only: tool_choice is of type '${String(choice.type)}'.`,
      'tool_choice.type',
      'unsupported_tool',
    );
  }
}
