import { namesAnyProvider } from '../shared/auth/managed-provider';
import { badRequest } from '../shared/errors';
import { json, ok } from '../shared/http/response';
import type { GatewayRequest, HttpResponse, ResponseBody } from '../shared/http/types';
import { readBody } from '../shared/net/http-client';
import { chatResponse, parseChatBody } from '../gateway/chat';
import { chatCall, type ChatOutcome } from '../gateway/chat-core';
import { requestFacts } from '../gateway/request-log';
import { completionBody, composeChatBody, type ChatBody } from './compose';
import { selectByRef } from './resolve';
import { parseRunBody, type RunBody } from './schemas';
import { renderMessages } from './template';
import type { PromptVersion } from './types';

/** `POST /prompts/{promptId}/render` and `POST /prompts/{promptId}/completions`. */

function renderBody(version: PromptVersion, body: RunBody): ChatBody {
  const messages = renderMessages(version.string, body.variables, version.is_raw_template === 1);
  return composeChatBody(version, messages, body);
}

/** `{success: true, data}`, where data is a /v1/chat/completions body. */
export async function render(req: GatewayRequest): Promise<HttpResponse> {
  const body = parseRunBody(req.json());
  const { version } = await selectByRef(req.auth.workspaceId, req.params.promptId!, true);
  return ok({ success: true, data: renderBody(version, body) });
}

/**
 * The request the chat pipeline sees: the rendered body, and the version's managed
 * provider as `x-gateway-provider: @slug` unless the caller named a provider themselves.
 */
function chatRequest(req: GatewayRequest, version: PromptVersion, body: ChatBody): GatewayRequest {
  const callerNamedProvider = namesAnyProvider(req.headers);
  if (!callerNamedProvider && !version.virtual_key) {
    throw badRequest(
      'This prompt template version has no `virtual_key` (managed provider); set one on the template or send `x-gateway-provider`, `x-gateway-virtual-key` or `x-gateway-config`.',
      'x-gateway-provider',
      'missing_provider',
    );
  }
  const headers = callerNamedProvider ? req.headers : { ...req.headers, 'x-gateway-provider': `@${version.virtual_key}` };
  return { ...req, headers, json: () => body };
}

async function bodyText(body: ResponseBody | undefined): Promise<string> {
  if (body === undefined) return '';
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body)) return body.toString('utf8');
  return (await readBody(body, 20 * 1024 * 1024)).toString('utf8');
}

/**
 * `{status, headers, body}` around a 200 chat completion. Errors, and answers a
 * non-blocking guardrail flagged (246), pass through unchanged.
 */
async function wrapCompletion(outcome: ChatOutcome): Promise<HttpResponse> {
  const res = await chatResponse(outcome);
  if (outcome.kind !== 'completion' || outcome.status !== 200) return { ...res, body: await bodyText(res.body) };
  const headers = Object.fromEntries(Object.entries(res.headers ?? {}).filter(([name]) => name.toLowerCase() !== 'content-length'));
  const gateway = Object.fromEntries(Object.entries(headers).filter(([name]) => name.startsWith('x-gateway-') || name.startsWith('x-ratelimit-')));
  return json(200, { status: 'success', headers, body: outcome.completion }, gateway);
}

/** `POST /v1/prompts/{promptId}/completions`, under the `requestLog` middleware. */
export async function completions(req: GatewayRequest): Promise<HttpResponse> {
  const facts = requestFacts(req);
  const body = parseRunBody(req.json());
  const { prompt, version } = await selectByRef(req.auth.workspaceId, req.params.promptId!, true);
  facts.extra = {
    ...facts.extra,
    prompt_id: prompt.id,
    prompt_slug: prompt.slug,
    prompt_version_id: version.prompt_version_id,
    prompt_version: version.version,
  };
  const stream = body.stream === true;
  const data = completionBody(renderBody(version, body), stream);
  const chatReq = chatRequest(req, version, data);
  const outcome = await chatCall({ req: chatReq, body: parseChatBody(chatReq), log: facts });
  return stream ? chatResponse(outcome) : wrapCompletion(outcome);
}
