import { randomBytes } from 'node:crypto';
import { AwsJsonError } from '../aws-json-server';

interface PendingToken {
  executionArn: string;
  resolve: (output: unknown) => void;
  reject: (err: Error) => void;
}

/**
 * Task tokens of `.waitForTaskToken` tasks: a token is open while its task waits, and its
 * answer (SendTaskSuccess/Failure) settles the wait. A closed token is remembered, so a late
 * answer is TaskTimedOut (as AWS says of a task that has ended) rather than TaskDoesNotExist.
 */
export class TaskTokens {
  private readonly open = new Map<string, PendingToken>();
  private readonly closed = new Set<string>();

  /** A fresh token for a task of `executionArn`, and the answer it will get. */
  issue(executionArn: string): { token: string; answered: Promise<unknown> } {
    const token = randomBytes(24).toString('base64url');
    const answered = new Promise<unknown>((resolve, reject) => this.open.set(token, { executionArn, resolve, reject }));
    answered.catch(() => undefined);
    return { token, answered };
  }

  /** The task ended: a wait still open is rejected with `reason`, and the token answers TaskTimedOut from now on. */
  close(token: string, reason: Error): void {
    this.open.get(token)?.reject(reason);
    this.open.delete(token);
    this.closed.add(token);
  }

  /** Every open wait is rejected (the emulator stops). */
  rejectAll(reason: Error): void {
    for (const pending of this.open.values()) pending.reject(reason);
  }

  succeed(token: unknown, output: unknown): void {
    this.pending(token).resolve(output);
  }

  fail(token: unknown, err: Error): void {
    this.pending(token).reject(err);
  }

  /** Throws what AWS answers for a token that is not open (TaskTimedOut, TaskDoesNotExist). */
  assertOpen(token: unknown): void {
    this.pending(token);
  }

  private pending(token: unknown): PendingToken {
    const t = String(token ?? '');
    const pending = this.open.get(t);
    if (pending) return pending;
    if (this.closed.has(t)) throw new AwsJsonError('TaskTimedOut', 'Task Timed Out: the task of this token has already closed.');
    throw new AwsJsonError('TaskDoesNotExist', 'Task Does Not Exist: unknown task token.');
  }
}
