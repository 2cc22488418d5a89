/**
 * Structured output on providers whose only reliable means is a forced tool call
 * (Anthropic Messages, Bedrock Converse): `response_format` becomes one extra tool whose
 * input schema is the caller's schema, the request forces a tool call, and the tool's
 * input comes back as the message content. A schema whose root is not an object (tool
 * inputs must be objects) is wrapped in `{value: …}` under a second name and unwrapped.
 */
import { badRequest } from '../../shared/errors';
import type { ChatRequest } from '../types';

export const JSON_ANSWER_TOOL = 'json_answer';
export const JSON_VALUE_TOOL = 'json_answer_value';

export interface JsonAnswerTool {
  name: typeof JSON_ANSWER_TOOL | typeof JSON_VALUE_TOOL;
  description: string;
  inputSchema: Record<string, unknown>;
}

export const isJsonAnswerTool = (name: string | undefined): boolean => name === JSON_ANSWER_TOOL || name === JSON_VALUE_TOOL;

/** The answer tool for a request's `response_format`, or undefined when it asks for none. */
export function jsonAnswerTool(body: ChatRequest): JsonAnswerTool | undefined {
  const format = body.response_format;
  if (!format || format.type === 'text') return undefined;
  for (const [i, tool] of (body.tools ?? []).entries()) {
    if (isJsonAnswerTool(tool.function?.name)) {
      throw badRequest(
        `The tool name '${tool.function.name}' is reserved by the gateway for \`response_format\` on this provider.`,
        `tools[${i}].function.name`,
      );
    }
  }
  const purpose = format.json_schema?.name ? ` (${format.json_schema.name})` : '';
  const description = `Give your final answer${purpose} by calling this tool: its input is the answer.`;
  if (format.type === 'json_object') return { name: JSON_ANSWER_TOOL, description, inputSchema: { type: 'object' } };
  const schema = format.json_schema?.schema;
  if (schema !== undefined && (typeof schema !== 'object' || schema === null || Array.isArray(schema))) {
    throw badRequest('`response_format.json_schema.schema` must be a JSON Schema object.', 'response_format.json_schema.schema');
  }
  if (!schema || schema.type === 'object') return { name: JSON_ANSWER_TOOL, description, inputSchema: schema ?? { type: 'object' } };
  return {
    name: JSON_VALUE_TOOL,
    description,
    inputSchema: { type: 'object', properties: { value: schema }, required: ['value'], additionalProperties: false },
  };
}

/** The answer text of the answer tool's input: the JSON the caller asked for. */
export function jsonAnswerText(name: string | undefined, input: unknown): string {
  const value = name === JSON_VALUE_TOOL && input && typeof input === 'object' ? (input as { value?: unknown }).value : input;
  return JSON.stringify(value ?? null);
}

/** The answer text from the tool input's JSON text as streamed (arguments). */
export function jsonAnswerFromArguments(name: string | undefined, argumentsJson: string): string {
  if (name !== JSON_VALUE_TOOL) return argumentsJson;
  try {
    return jsonAnswerText(name, JSON.parse(argumentsJson || '{}'));
  } catch {
    return argumentsJson;
  }
}

/**
 * How the request forces a tool: the answer tool alone, or, when the caller's own tools
 * stay callable, any tool (either a tool call or the JSON answer, never free text).
 */
export function forcedToolChoice(body: ChatRequest): { kind: 'answer' } | { kind: 'any' } | { kind: 'caller' } {
  const callerTools = (body.tools?.length ?? 0) > 0 && body.tool_choice !== 'none';
  if (!callerTools) return { kind: 'answer' };
  return typeof body.tool_choice === 'object' ? { kind: 'caller' } : { kind: 'any' };
}
