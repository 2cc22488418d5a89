/**
 * How many invocations this process is serving, and writes held back while it is busy.
 *
 * Lambda on demand gives an execution environment one invocation at a time and may freeze it
 * as soon as that invocation ends, so whatever an invocation writes must be written before it
 * ends. Lambda Managed Instances and the local runtime serve many invocations at once in one
 * thread: there, writes that requests can share (EMF metric values, spend counters) are held
 * for a short interval and written together, which is far fewer log bytes and write units per
 * request. The rule that keeps that safe: the invocation that leaves the process idle writes
 * everything still held, and waits for it, before it ends. So nothing is held while no
 * invocation is running (when an environment can be frozen or shut down), and a process that
 * serves one invocation at a time, or entries that do not count their invocations (the
 * workflow workers), write everything at once as before.
 *
 * What can be lost: values held when a busy process dies without ending its invocations (a
 * crash, not a shutdown: Lambda lets running invocations finish, and the Lambda entry
 * writes what is held on SIGTERM), at most one interval's. The local runtime re-derives
 * the spend counters from the request-log records after such a crash
 * (functions/spend/rederive.ts).
 */

let inFlight = 0;
const holders = new Set<() => Promise<void>>();

/** How long a busy process holds values before it writes them. */
export const HOLD_MS = 1000;

export function invocationStarted(): void {
  inFlight++;
}

/** Count the invocation out; the one that leaves the process idle writes what is held, and waits. */
export async function invocationEnded(): Promise<void> {
  inFlight--;
  if (inFlight === 0) await writeHeld();
}

/** Whether other invocations are running beside the caller's: then a shared write may wait for company. */
export const othersInFlight = (): boolean => inFlight > 1;

/** Register what writes a holder's values now; resolves when they are written. */
export function registerHolder(write: () => Promise<void>): void {
  holders.add(write);
}

/** Write everything held, now (idle process, shutdown, tests). */
export async function writeHeld(): Promise<void> {
  await Promise.all([...holders].map((write) => write()));
}
