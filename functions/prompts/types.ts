/** The fields of one immutable version of a prompt template. */
export interface VersionFields {
  /** The template: a JSON array of messages or the text of one user message (template.ts). */
  string: string;
  /** Saved model parameters (chat-completion hyperparameters). */
  parameters: Record<string, unknown>;
  model: string;
  /** Slug of the managed provider the template runs on. */
  virtual_key: string | null;
  version_description: string | null;
  functions: Array<Record<string, unknown>> | null;
  tools: Array<Record<string, unknown>> | null;
  tool_choice: string | Record<string, unknown> | null;
  /** 1: the string is used as written, without Mustache. */
  is_raw_template: 0 | 1;
  prompt_metadata: Record<string, unknown> | null;
}

export const VERSION_FIELD_NAMES = [
  'string',
  'parameters',
  'model',
  'virtual_key',
  'version_description',
  'functions',
  'tools',
  'tool_choice',
  'is_raw_template',
  'prompt_metadata',
] as const satisfies ReadonlyArray<keyof VersionFields>;

export interface PromptVersion extends VersionFields {
  prompt_id: string;
  /** uuid of this version. */
  prompt_version_id: string;
  /** 1, 2, 3, ... in the order versions were created. */
  version: number;
  created_at: number;
}

/** A template: identity, the version counter and the Published pointer. */
export interface PromptRecord {
  id: string;
  slug: string;
  name: string;
  collection_id: string | null;
  workspace_id: string;
  latest_version: number;
  latest_version_id: string;
  published_version: number;
  published_version_id: string;
  created_at: number;
  updated_at: number;
}
