import { getMessage, listMessages } from '../store/messages';
import type { RunRecord } from '../store/runs';
import { runRef } from '../store/runs';
import { listSteps } from '../store/steps';
import { messageText, type RunTurn } from './request';
import type { Message, RunStep } from '../types';

/**
 * Loads what a model call needs: the thread's messages (oldest first, without the run's
 * own) and the run's earlier turns, from its steps. A message_creation step directly
 * followed by a tool_calls step is the text the model wrote before those calls (a call
 * that ends in text only ends the run, so no other step can follow it).
 */

/** Most thread messages a model call reads (newest first), whatever the truncation. */
export const MAX_CONTEXT_MESSAGES = 500;
const PAGE = 100;

export async function loadThreadMessages(record: RunRecord): Promise<{ thread: Message[]; own: Map<string, Message> }> {
  const { run, workspaceId } = record;
  const wanted =
    run.truncation_strategy.type === 'last_messages' && run.truncation_strategy.last_messages ? run.truncation_strategy.last_messages : MAX_CONTEXT_MESSAGES;
  const thread: Message[] = [];
  const own = new Map<string, Message>();
  let after: string | undefined;
  let scanned = 0;
  for (;;) {
    const page = await listMessages(workspaceId, run.thread_id, { limit: PAGE, order: 'desc', after });
    for (const m of page.items) {
      if (m.run_id === run.id) own.set(m.id, m);
      else if (thread.length < wanted) thread.push(m);
    }
    scanned += page.items.length;
    after = page.items.at(-1)?.id;
    if (!page.hasMore || !after || thread.length >= wanted || scanned >= MAX_CONTEXT_MESSAGES * 2) break;
  }
  return { thread: thread.reverse(), own };
}

async function allSteps(record: RunRecord): Promise<RunStep[]> {
  const steps: RunStep[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await listSteps(runRef(record), { limit: PAGE, order: 'asc', after });
    steps.push(...page.items);
    after = page.items.at(-1)?.id;
    if (!page.hasMore || !after) return steps;
  }
}

/** The run's earlier tool-call turns, in order. */
export async function loadRunTurns(record: RunRecord, own: Map<string, Message>): Promise<RunTurn[]> {
  const steps = await allSteps(record);
  const turns: RunTurn[] = [];
  let preamble: string | null = null;
  for (const step of steps) {
    const details = step.step_details;
    if (details.type === 'message_creation') {
      const id = details.message_creation.message_id;
      const message = own.get(id) ?? (await getMessage(record.workspaceId, record.run.thread_id, id));
      preamble = message ? messageText(message) : null;
      continue;
    }
    if (step.status === 'cancelled' || step.status === 'failed') {
      preamble = null;
      continue;
    }
    turns.push({
      text: preamble,
      toolCalls: details.tool_calls.map(({ function: f, ...call }) => ({ ...call, function: { name: f.name, arguments: f.arguments }, output: f.output })),
    });
    preamble = null;
  }
  return turns;
}
