import { notFound } from '../shared/errors';
import { parsePromptRef, promptNotFound, type PromptRef } from './ref';
import { findPrompt, getVersion, selectVersion } from './store';
import type { PromptRecord, PromptVersion } from './types';

/**
 * `{promptId}` -> the template and the version its suffix selects; a 404 when either is
 * unknown in the caller's workspace (another workspace's template is unknown too).
 * `cached` reads serve the data plane (render, completions): a publish or update made in
 * another container is seen within CONTROL_CACHE_TTL_MS.
 */
export interface Selected {
  ref: PromptRef;
  prompt: PromptRecord;
  version: PromptVersion;
}

export const versionNotFound = (raw: string, n: number | string) =>
  notFound(`Prompt template '${raw.slice(0, 160)}' has no version ${String(n).slice(0, 16)}.`, 'promptId');

export async function findByRef(workspaceId: string, raw: string, cached = false): Promise<{ ref: PromptRef; prompt: PromptRecord }> {
  const ref = parsePromptRef(raw);
  const prompt = await findPrompt(workspaceId, ref.ref, { cached });
  if (!prompt) throw promptNotFound(raw);
  return { ref, prompt };
}

export async function selectByRef(workspaceId: string, raw: string, cached = false): Promise<Selected> {
  const { ref, prompt } = await findByRef(workspaceId, raw, cached);
  const n = selectVersion(prompt, ref.selector);
  const version = n === undefined ? undefined : await getVersion(workspaceId, prompt.id, n, { cached });
  if (!version) throw versionNotFound(raw, ref.selector.kind === 'number' ? ref.selector.n : (n ?? '?'));
  return { ref, prompt, version };
}
