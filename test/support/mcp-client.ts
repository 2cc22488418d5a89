import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'vitest';

/** The text of a tool result's first content item. */
export const toolText = (result: unknown) => (result as { content: { type: string; text: string }[] }).content[0]!.text;

/** The JSON-RPC error a call ends with (it must end with one). */
export async function rpcError(promise: Promise<unknown>): Promise<McpError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(McpError);
  return err as McpError;
}
