/** The Responses objects the gateway produces (the subset of OpenAI's it can fill). */

export interface OutputText {
  type: 'output_text';
  text: string;
  annotations: never[];
  logprobs: never[];
}
export interface OutputRefusal {
  type: 'refusal';
  refusal: string;
}

export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

export interface OutputMessage {
  id: string;
  type: 'message';
  status: ItemStatus;
  role: 'assistant';
  content: Array<OutputText | OutputRefusal>;
}
export interface FunctionCallItem {
  id: string;
  type: 'function_call';
  status: ItemStatus;
  call_id: string;
  name: string;
  arguments: string;
}
/** A tool of an MCP server as the Responses API lists it (`mcp_list_tools`). */
export interface McpListedTool {
  name: string;
  input_schema: unknown;
  description?: string | null;
  annotations?: unknown | null;
}
export interface McpListToolsItem {
  id: string;
  type: 'mcp_list_tools';
  server_label: string;
  tools: McpListedTool[];
  error?: string | null;
}
export interface McpCallItem {
  id: string;
  type: 'mcp_call';
  server_label: string;
  name: string;
  /** The arguments as a JSON string. */
  arguments: string;
  output?: string | null;
  error?: string | null;
  status?: 'in_progress' | 'completed' | 'incomplete' | 'calling' | 'failed';
  approval_request_id?: string | null;
}
export interface McpApprovalRequestItem {
  id: string;
  type: 'mcp_approval_request';
  server_label: string;
  name: string;
  arguments: string;
}
/** Output items of a response whose MCP tools the gateway ran (functions/mcp/tool-loop). */
export type McpOutputItem = McpListToolsItem | McpCallItem | McpApprovalRequestItem;
export type OutputItem = OutputMessage | FunctionCallItem | McpOutputItem;

export interface ResponsesUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

export interface ResponseObject {
  id: string;
  object: 'response';
  created_at: number;
  status: ResponseStatus;
  completed_at: number | null;
  error: { code: string; message: string } | null;
  incomplete_details: { reason: 'max_output_tokens' | 'content_filter' } | null;
  instructions: string | null;
  max_output_tokens: number | null;
  model: string;
  output: OutputItem[];
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  reasoning: { effort: string | null; summary: string | null };
  store: boolean;
  temperature: number;
  text: { format: Record<string, unknown> & { type: string }; verbosity?: string };
  tool_choice: unknown;
  tools: unknown[];
  top_p: number;
  truncation: 'disabled';
  usage: ResponsesUsage | null;
  user: string | null;
  metadata: Record<string, string>;
  background: false;
  service_tier: 'default';
}

/** One Responses stream event; every event carries its `sequence_number`. */
export type ResponsesStreamEvent = { type: string; sequence_number: number } & Record<string, unknown>;
