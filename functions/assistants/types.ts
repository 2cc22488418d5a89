/**
 * Public objects of the Assistants v2 API.
 * Every field is always present; `null` where the spec allows it.
 */

export type Metadata = Record<string, string>;

export interface FunctionTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null };
}
/** Only function tools exist here: code_interpreter / file_search are refused with a 400. */
export type Tool = FunctionTool;

export type ToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

export type ResponseFormat =
  | 'auto'
  | 'none'
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean | null } };

export interface TruncationStrategy {
  type: 'auto' | 'last_messages';
  last_messages: number | null;
}

/** No tool resources are supported yet, so this is always `{}` when present. */
export type ToolResources = Record<string, never>;

export interface Assistant {
  id: string;
  object: 'assistant';
  created_at: number;
  name: string | null;
  description: string | null;
  model: string;
  instructions: string | null;
  tools: Tool[];
  tool_resources: ToolResources | null;
  metadata: Metadata;
  temperature: number | null;
  top_p: number | null;
  response_format: ResponseFormat;
  /** Extension: the managed provider the assistant is bound to, `@slug` (never a credential). */
  provider: string;
}

export interface Thread {
  id: string;
  object: 'thread';
  created_at: number;
  tool_resources: ToolResources | null;
  metadata: Metadata;
}

export type ImageDetail = 'auto' | 'low' | 'high';

export type MessageContent =
  | { type: 'text'; text: { value: string; annotations: unknown[] } }
  | { type: 'image_url'; image_url: { url: string; detail: ImageDetail } }
  | { type: 'image_file'; image_file: { file_id: string; detail: ImageDetail } }
  | { type: 'refusal'; refusal: string };

export interface Attachment {
  file_id: string;
  tools: Array<{ type: string }>;
}

export type MessageStatus = 'in_progress' | 'incomplete' | 'completed';

export interface Message {
  id: string;
  object: 'thread.message';
  created_at: number;
  thread_id: string;
  status: MessageStatus;
  incomplete_details: { reason: string } | null;
  completed_at: number | null;
  incomplete_at: number | null;
  role: 'user' | 'assistant';
  content: MessageContent[];
  assistant_id: string | null;
  run_id: string | null;
  attachments: Attachment[] | null;
  metadata: Metadata;
}

export const RUN_STATUSES = ['queued', 'in_progress', 'requires_action', 'cancelling', 'cancelled', 'failed', 'completed', 'incomplete', 'expired'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** A run in one of these never changes again, and holds no claim on its thread. */
export const TERMINAL_RUN_STATUSES = ['cancelled', 'failed', 'completed', 'incomplete', 'expired'] as const satisfies readonly RunStatus[];
export const ACTIVE_RUN_STATUSES = ['queued', 'in_progress', 'requires_action', 'cancelling'] as const satisfies readonly RunStatus[];
export const isTerminal = (s: RunStatus) => (TERMINAL_RUN_STATUSES as readonly RunStatus[]).includes(s);

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface RequiredAction {
  type: 'submit_tool_outputs';
  submit_tool_outputs: { tool_calls: ToolCall[] };
}

export interface Usage {
  completion_tokens: number;
  prompt_tokens: number;
  total_tokens: number;
}

export interface Run {
  id: string;
  object: 'thread.run';
  created_at: number;
  thread_id: string;
  assistant_id: string;
  status: RunStatus;
  required_action: RequiredAction | null;
  last_error: { code: string; message: string } | null;
  expires_at: number | null;
  started_at: number | null;
  cancelled_at: number | null;
  failed_at: number | null;
  completed_at: number | null;
  incomplete_details: { reason: string } | null;
  model: string;
  instructions: string;
  tools: Tool[];
  metadata: Metadata;
  usage: Usage | null;
  temperature: number | null;
  top_p: number | null;
  max_prompt_tokens: number | null;
  max_completion_tokens: number | null;
  truncation_strategy: TruncationStrategy;
  tool_choice: ToolChoice;
  parallel_tool_calls: boolean;
  response_format: ResponseFormat;
}

export type StepStatus = 'in_progress' | 'cancelled' | 'failed' | 'completed' | 'expired';

export type StepDetails =
  | { type: 'message_creation'; message_creation: { message_id: string } }
  | { type: 'tool_calls'; tool_calls: Array<ToolCall & { function: ToolCall['function'] & { output: string | null } }> };

export interface RunStep {
  id: string;
  object: 'thread.run.step';
  created_at: number;
  run_id: string;
  assistant_id: string;
  thread_id: string;
  type: StepDetails['type'];
  status: StepStatus;
  cancelled_at: number | null;
  completed_at: number | null;
  expired_at: number | null;
  failed_at: number | null;
  last_error: { code: string; message: string } | null;
  step_details: StepDetails;
  usage: Usage | null;
  metadata: Metadata;
}

export interface ToolOutput {
  tool_call_id: string;
  output: string;
}

/** Unix seconds, the unit of every `*_at` field. */
export const nowSeconds = () => Math.floor(Date.now() / 1000);
