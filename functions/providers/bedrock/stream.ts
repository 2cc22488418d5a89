/**
 * ConverseStream (binary AWS event stream) -> OpenAI chunks:
 * messageStart -> role chunk; contentBlockStart(toolUse) -> tool call head (id, name);
 * contentBlockDelta -> content / argument fragments; messageStop -> finish_reason;
 * metadata -> usage (and the usage chunk when asked for). Exception frames inside the 200
 * stream become a StreamError with the status of the contract's table.
 */
import { isJsonAnswerTool, jsonAnswerFromArguments, JSON_ANSWER_TOOL } from '../_shared/json-answer';
import { EventStreamFramer, type EventFrame } from '../_shared/aws-eventstream';
import { finishReasonOf, usageOf } from './chat';
import { chunk, invalidChunk, usageChunk } from '../_shared/openai-shape';
import type { ChatCompletionChunk, StreamError, StreamTranslator, TranslateContext, Usage } from '../types';
import { providerErrorFacts } from '../_shared/error-body';

type Delta = ChatCompletionChunk['choices'][number]['delta'];

const EXCEPTION_STATUS: Record<string, number> = {
  validationException: 400,
  accessDeniedException: 403,
  resourceNotFoundException: 404,
  modelTimeoutException: 408,
  modelStreamErrorException: 424,
  throttlingException: 429,
  serviceQuotaExceededException: 400,
  internalServerException: 500,
  serviceUnavailableException: 503,
};

function exceptionOf(frame: EventFrame): StreamError {
  const kind = frame.headers[':exception-type'] ?? frame.headers[':error-code'] ?? 'internalServerException';
  let message = frame.headers[':error-message'];
  try {
    message = providerErrorFacts(JSON.parse(frame.text())).message ?? message ?? '';
  } catch {
    // body is not JSON: keep the header message
  }
  const status = EXCEPTION_STATUS[kind] ?? EXCEPTION_STATUS[kind.charAt(0).toLowerCase() + kind.slice(1)] ?? 500;
  return {
    status,
    message: message || `Bedrock stream failed: ${kind}.`,
    type: status === 400 ? 'invalid_request_error' : status === 429 ? 'rate_limit_error' : 'upstream_error',
    code: kind,
  };
}

interface StreamEvent {
  contentBlockIndex?: number;
  start?: { toolUse?: { toolUseId: string; name: string } };
  delta?: { text?: string; toolUse?: { input?: string } };
  stopReason?: string;
  usage?: Parameters<typeof usageOf>[0];
}

export function bedrockStream(ctx: TranslateContext): StreamTranslator {
  const framer = new EventStreamFramer();
  let chunks: ChatCompletionChunk[] = [];
  let error: StreamError | undefined;
  let reported = false;
  let usage: Usage | undefined;
  let started = false;
  /** contentBlockIndex -> OpenAI tool_calls[].index */
  const toolIndex = new Map<number, number>();
  /** The answer tool's block (structured output): its input is streamed as content. */
  let answer: { block: number; name: string; json: string } | undefined;

  const emit = (delta: Delta, finish: ChatCompletionChunk['choices'][number]['finish_reason'] = null) => {
    chunks.push(chunk(ctx, started ? delta : { role: 'assistant', ...delta }, finish));
    started = true;
  };
  const toolIndexOf = (block: number) => {
    if (!toolIndex.has(block)) toolIndex.set(block, toolIndex.size);
    return toolIndex.get(block)!;
  };

  const onEvent = (type: string | undefined, e: StreamEvent) => {
    const block = e.contentBlockIndex ?? 0;
    switch (type) {
      case 'messageStart':
        if (!started) emit({ content: '' });
        break;
      case 'contentBlockStart':
        if (isJsonAnswerTool(e.start?.toolUse?.name)) answer = { block, name: e.start!.toolUse!.name, json: '' };
        else if (e.start?.toolUse) {
          const { toolUseId, name } = e.start.toolUse;
          emit({ tool_calls: [{ index: toolIndexOf(block), id: toolUseId, type: 'function', function: { name, arguments: '' } }] });
        }
        break;
      case 'contentBlockDelta':
        if (typeof e.delta?.text === 'string') emit({ content: e.delta.text });
        else if (e.delta?.toolUse && answer?.block === block) {
          // An object answer streams as it comes; a wrapped value waits for its block's end.
          if (answer.name === JSON_ANSWER_TOOL) emit({ content: e.delta.toolUse.input ?? '' });
          else answer.json += e.delta.toolUse.input ?? '';
        } else if (e.delta?.toolUse) emit({ tool_calls: [{ index: toolIndexOf(block), function: { arguments: e.delta.toolUse.input ?? '' } }] });
        break; // reasoningContent / citation deltas have no OpenAI chunk field
      case 'contentBlockStop':
        if (answer?.block === block && answer.name !== JSON_ANSWER_TOOL) emit({ content: jsonAnswerFromArguments(answer.name, answer.json) });
        break;
      case 'messageStop':
        emit({}, toolIndex.size > 0 ? 'tool_calls' : answer && e.stopReason === 'tool_use' ? 'stop' : finishReasonOf(e.stopReason));
        break;
      case 'metadata':
        usage = usageOf(e.usage);
        if (usage && ctx.includeUsage) chunks.push(usageChunk(ctx, usage));
        break;
      default:
        break; // future events
    }
  };

  const onFrame = (frame: EventFrame) => {
    if (frame.messageType !== 'event') {
      error = exceptionOf(frame);
      return;
    }
    let event: StreamEvent;
    try {
      event = JSON.parse(frame.text()) as StreamEvent;
    } catch {
      error = invalidChunk('Bedrock');
      return;
    }
    onEvent(frame.headers[':event-type'], event);
  };

  /** Ready chunks, and the first error once; after an error the rest is ignored. */
  const drain = () => {
    const out = { chunks, ...(error && !reported ? { error } : {}) };
    reported ||= !!error;
    chunks = [];
    return out;
  };

  return {
    push(bytes) {
      if (error) return drain();
      const { frames, error: corrupt } = framer.push(bytes);
      for (const frame of frames) {
        onFrame(frame);
        if (error) return drain();
      }
      if (corrupt) error = { ...invalidChunk('Bedrock'), message: `Bedrock sent a corrupt event-stream frame: ${corrupt}.` };
      return drain();
    },
    end() {
      if (!error && framer.pending > 0) error = { ...invalidChunk('Bedrock'), message: 'The Bedrock event stream ended inside a frame.' };
      return drain();
    },
    usage: () => usage,
  };
}
