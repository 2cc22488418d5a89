import type { ToolCallDelta } from './call';
import type { CallIds } from './state';
import { addMessageOnce, getMessage, updateMessage } from '../store/messages';
import type { RunEventSink } from './events';
import { runRef, type RunRecord } from '../store/runs';
import { createStepOnce, getStep, transitionStep, type StepPatch } from '../store/steps';
import { nowSeconds, type Message, type MessageStatus, type RunStep, type StepDetails, type ToolCall } from '../types';

/**
 * The items one model call writes, and their stream events, in the canonical order:
 * a message_creation step and its assistant message are opened at the first text delta
 * (step.created, step.in_progress, message.created, message.in_progress, message.delta…);
 * tool calls close that message (it was the text before the calls) and open a tool_calls
 * step (step.created, step.in_progress, step.delta…). Ids are the call's deterministic
 * ids, writes are conditional: a retried call writes nothing twice.
 */

type StepToolCalls = Extract<StepDetails, { type: 'tool_calls' }>['tool_calls'];

export const stepEvent = (step: RunStep) => `thread.run.step.${step.status}`;
export const messageEvent = (m: Message) => `thread.message.${m.status}`;

export class CallWriter {
  private message: Message | undefined;
  private messageStep: RunStep | undefined;
  private toolStep: RunStep | undefined;
  private text = '';
  private readonly seenCalls = new Set<number>();
  /** Tool calls as streamed so far (for a step closed before the call ended). */
  private readonly partial: ToolCall[] = [];

  constructor(
    private readonly record: RunRecord,
    private readonly ids: CallIds,
    private readonly events: RunEventSink,
  ) {}

  private get ref() {
    return runRef(this.record);
  }

  get hasToolStep(): boolean {
    return this.toolStep !== undefined;
  }

  async onText(delta: string): Promise<void> {
    if (this.toolStep) return; // text after tool calls has no message left to go to
    await this.openMessage();
    this.text += delta;
    const content = [{ index: 0, type: 'text', text: { value: delta, annotations: [] } }];
    this.events.emit('thread.message.delta', { id: this.message!.id, object: 'thread.message.delta', delta: { content } });
  }

  async onToolCall(d: ToolCallDelta): Promise<void> {
    if (!this.toolStep) {
      await this.closeMessage('completed', null, { status: 'completed', usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } });
      const { step } = await createStepOnce(this.ref, {
        id: this.ids.toolStep,
        assistantId: this.record.run.assistant_id,
        details: { type: 'tool_calls', tool_calls: [] },
      });
      this.toolStep = step;
      this.events.emit('thread.run.step.created', step);
      this.events.emit('thread.run.step.in_progress', step);
    }
    const first = !this.seenCalls.has(d.index);
    this.seenCalls.add(d.index);
    const acc = (this.partial[d.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
    if (d.id) acc.id = d.id;
    if (d.name) acc.function.name += d.name;
    if (d.arguments) acc.function.arguments += d.arguments;
    const call = first
      ? { index: d.index, id: d.id ?? '', type: 'function', function: { name: d.name ?? '', arguments: d.arguments ?? '', output: null } }
      : { index: d.index, type: 'function', function: { arguments: d.arguments ?? '' } };
    this.events.emit('thread.run.step.delta', {
      id: this.toolStep.id,
      object: 'thread.run.step.delta',
      delta: { step_details: { type: 'tool_calls', tool_calls: [call] } },
    });
  }

  /** Open the message (and its step) now, e.g. for an empty final answer. */
  async openMessage(): Promise<void> {
    if (this.message) return;
    const { run, workspaceId } = this.record;
    const { step } = await createStepOnce(this.ref, {
      id: this.ids.messageStep,
      assistantId: run.assistant_id,
      details: { type: 'message_creation', message_creation: { message_id: this.ids.message } },
    });
    this.messageStep = step;
    this.events.emit('thread.run.step.created', step);
    this.events.emit('thread.run.step.in_progress', step);
    const message = await addMessageOnce(workspaceId, run.thread_id, {
      id: this.ids.message,
      role: 'assistant',
      content: [],
      attachments: [],
      metadata: {},
      assistant_id: run.assistant_id,
      run_id: run.id,
      status: 'in_progress',
    });
    if (!message) throw new Error(`thread ${run.thread_id} of run ${run.id} no longer exists`);
    this.message = message;
    this.events.emit('thread.message.created', message);
    this.events.emit('thread.message.in_progress', message);
  }

  /** Finish the open message (status, reason) and its step (patch); no-op without one. */
  async closeMessage(status: MessageStatus, reason: string | null, step: StepPatch): Promise<void> {
    if (!this.message || !this.messageStep || this.messageStep.status !== 'in_progress') return;
    const { workspaceId, run } = this.record;
    const now = nowSeconds();
    const patch = {
      status,
      content: [{ type: 'text' as const, text: { value: this.text, annotations: [] } }],
      completed_at: status === 'completed' ? now : null,
      incomplete_at: status === 'incomplete' ? now : null,
      incomplete_details: reason ? { reason } : null,
    };
    const message =
      (await updateMessage(workspaceId, run.thread_id, this.message.id, patch, { whileInProgress: true })) ??
      (await getMessage(workspaceId, run.thread_id, this.message.id));
    if (message) {
      this.message = message;
      this.events.emit(messageEvent(message), message);
    }
    this.messageStep = (await this.finishStep(this.messageStep.id, step)) ?? { ...this.messageStep, status: step.status };
  }

  /** Final tool calls on the open tool step, which stays in_progress until outputs arrive. */
  async recordToolCalls(calls: ToolCall[]): Promise<void> {
    const step = this.toolStep ?? (await this.openToolStepQuietly());
    const details: StepDetails = { type: 'tool_calls', tool_calls: withOutputs(calls) };
    this.toolStep = (await transitionStep(this.ref, step.id, { status: 'in_progress', step_details: details })) ?? step;
  }

  /** Finish the tool step (cancelled / failed / …) with the final calls (default: as streamed so far). */
  async closeToolStep(patch: StepPatch, calls: ToolCall[] = this.partial.filter(Boolean)): Promise<void> {
    if (this.toolStep?.status !== 'in_progress') return;
    const details: StepDetails = { type: 'tool_calls', tool_calls: withOutputs(calls) };
    this.toolStep = (await this.finishStep(this.toolStep.id, { ...patch, step_details: details })) ?? this.toolStep;
  }

  private async openToolStepQuietly(): Promise<RunStep> {
    const { step } = await createStepOnce(this.ref, {
      id: this.ids.toolStep,
      assistantId: this.record.run.assistant_id,
      details: { type: 'tool_calls', tool_calls: [] },
    });
    return step;
  }

  private async finishStep(id: string, patch: StepPatch): Promise<RunStep | undefined> {
    const step = (await transitionStep(this.ref, id, patch)) ?? (await getStep(this.ref, id));
    if (step) this.events.emit(stepEvent(step), step);
    return step;
  }
}

function withOutputs(calls: ToolCall[]): StepToolCalls {
  return calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.function.name, arguments: c.function.arguments, output: null } }));
}
