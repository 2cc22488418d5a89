import type { PromptRecord, PromptVersion, VersionFields } from './types';
import { VERSION_FIELD_NAMES } from './types';

/** What the prompt routes return. */

/** The result of creating or updating a template. */
export const updateResult = (prompt: PromptRecord, version: PromptVersion) => ({
  id: prompt.id,
  slug: prompt.slug,
  prompt_version_id: version.prompt_version_id,
});

const status = (prompt: PromptRecord, version: PromptVersion) =>
  version.version === prompt.published_version ? ('published' as const) : ('unpublished' as const);

const fieldsOf = (version: PromptVersion) => Object.fromEntries(VERSION_FIELD_NAMES.map((f) => [f, version[f]])) as unknown as VersionFields;

/** A template in a list: identity, counters, the Published pointer. */
export const promptSummary = (prompt: PromptRecord) => ({
  object: 'prompt' as const,
  id: prompt.id,
  slug: prompt.slug,
  name: prompt.name,
  collection_id: prompt.collection_id,
  workspace_id: prompt.workspace_id,
  latest_version: prompt.latest_version,
  latest_version_id: prompt.latest_version_id,
  published_version: prompt.published_version,
  published_version_id: prompt.published_version_id,
  created_at: prompt.created_at,
  updated_at: prompt.updated_at,
});

/** A template with the fields of one selected version. */
export const promptWithVersion = (prompt: PromptRecord, version: PromptVersion) => ({
  ...promptSummary(prompt),
  prompt_version_id: version.prompt_version_id,
  prompt_version: version.version,
  prompt_version_status: status(prompt, version),
  ...fieldsOf(version),
  version_created_at: version.created_at,
});

/** One item of `GET /prompts/{id}/versions`. */
export const versionView = (prompt: PromptRecord, version: PromptVersion) => ({
  object: 'prompt.version' as const,
  id: version.prompt_version_id,
  prompt_id: prompt.id,
  prompt_version_id: version.prompt_version_id,
  prompt_version: version.version,
  prompt_version_status: status(prompt, version),
  ...fieldsOf(version),
  created_at: version.created_at,
});
