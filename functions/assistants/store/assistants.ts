import { deleteItem, getItem, putNew, updateItem } from '../../shared/db/ops';
import { listPage, type Page, type PageRequest } from '../../shared/db/list';
import { ID_PREFIX, newId } from '../../shared/ids';
import { asItem, ASSISTANT_PREFIX, assistantKey, fromJson, toJson } from './db';
import { nowSeconds, type Assistant, type Metadata, type ResponseFormat, type Tool, type ToolResources } from '../types';

/**
 * Assistants in the control table, one item per assistant under the workspace partition.
 * The managed provider binding is stored as its slug only (never a credential).
 */

export interface AssistantFields {
  model: string;
  name: string | null;
  description: string | null;
  instructions: string | null;
  tools: Tool[];
  tool_resources: ToolResources | null;
  metadata: Metadata;
  temperature: number | null;
  top_p: number | null;
  response_format: ResponseFormat;
  /** Managed provider slug, without `@`. */
  provider: string;
}

interface AssistantItem {
  pk: string;
  sk: string;
  id: string;
  created_at: number;
  model: string;
  name: string | null;
  description: string | null;
  instructions: string | null;
  tools_json: string;
  tool_resources_json: string | null;
  metadata_json: string;
  temperature: number | null;
  top_p: number | null;
  response_format_json: string;
  provider: string;
}

function toItemFields(f: Partial<AssistantFields>): Partial<AssistantItem> {
  const out: Partial<AssistantItem> = {};
  if (f.model !== undefined) out.model = f.model;
  if (f.name !== undefined) out.name = f.name;
  if (f.description !== undefined) out.description = f.description;
  if (f.instructions !== undefined) out.instructions = f.instructions;
  if (f.tools !== undefined) out.tools_json = toJson(f.tools);
  if (f.tool_resources !== undefined) out.tool_resources_json = f.tool_resources === null ? null : toJson(f.tool_resources);
  if (f.metadata !== undefined) out.metadata_json = toJson(f.metadata);
  if (f.temperature !== undefined) out.temperature = f.temperature;
  if (f.top_p !== undefined) out.top_p = f.top_p;
  if (f.response_format !== undefined) out.response_format_json = toJson(f.response_format);
  if (f.provider !== undefined) out.provider = f.provider;
  return out;
}

function fromItem(item: AssistantItem): Assistant {
  return {
    id: item.id,
    object: 'assistant',
    created_at: item.created_at,
    name: item.name ?? null,
    description: item.description ?? null,
    model: item.model,
    instructions: item.instructions ?? null,
    tools: fromJson<Tool[]>(item.tools_json, []),
    tool_resources: fromJson<ToolResources | null>(item.tool_resources_json, null),
    metadata: fromJson<Metadata>(item.metadata_json, {}),
    temperature: item.temperature ?? null,
    top_p: item.top_p ?? null,
    response_format: fromJson<ResponseFormat>(item.response_format_json, 'auto'),
    provider: `@${item.provider}`,
  };
}

/** The bound managed provider's slug (without `@`). */
export const providerSlugOf = (a: Assistant) => a.provider.slice(1);

export async function createAssistant(workspaceId: string, fields: AssistantFields): Promise<Assistant> {
  const id = newId(ID_PREFIX.assistant);
  const item = { ...assistantKey(workspaceId, id), id, created_at: nowSeconds(), ...toItemFields(fields) } as AssistantItem;
  await putNew('control', asItem(item));
  return fromItem(item);
}

export async function getAssistant(workspaceId: string, id: string): Promise<Assistant | undefined> {
  const item = await getItem<AssistantItem>('control', assistantKey(workspaceId, id), true);
  return item ? fromItem(item) : undefined;
}

export async function listAssistants(workspaceId: string, page: PageRequest): Promise<Page<Assistant>> {
  const result = await listPage<AssistantItem>({ table: 'control', partition: `WS#${workspaceId}`, prefix: ASSISTANT_PREFIX }, page);
  return { items: result.items.map(fromItem), hasMore: result.hasMore };
}

/** Apply the given fields; undefined when the assistant does not exist. */
export async function updateAssistant(workspaceId: string, id: string, patch: Partial<AssistantFields>): Promise<Assistant | undefined> {
  const item = await updateItem<AssistantItem>('control', assistantKey(workspaceId, id), {
    set: toItemFields(patch),
    condition: 'attribute_exists(pk)',
  });
  return item ? fromItem(item) : undefined;
}

export function deleteAssistant(workspaceId: string, id: string): Promise<boolean> {
  return deleteItem('control', assistantKey(workspaceId, id), 'attribute_exists(pk)');
}
