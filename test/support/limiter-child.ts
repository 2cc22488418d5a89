/**
 * A second process for the cross-process limiter test (test/integration/limiter.test.ts):
 * the same DynamoDB tables (AWS_ENDPOINT_URL_DYNAMODB and TABLE_* come from the parent's
 * environment), its own module instances, caches and DynamoDB client, like another
 * Lambda container.
 *
 * Usage: tsx limiter-child.ts <workspaceId> <organisationId> <calls> <nowMs> <metadata json> [rounds] [pauseMs]
 * Prints `ready` once warm, waits for a `go <epoch ms>` line on stdin, fires <calls>
 * concurrent enforceRateLimits calls at that instant (the parent fires its own at the same
 * instant), `rounds` times (default 1) with `pauseMs` between rounds, and prints
 * {"admitted": n, "refused": n, "errors": [...]}.
 */
import { createInterface } from 'node:readline';

const [workspaceId, organisationId, callsArg, nowArg, metadataArg, roundsArg, pauseArg] = process.argv.slice(2);
const calls = Number(callsArg);
const rounds = Number(roundsArg ?? 1);
const pauseMs = Number(pauseArg ?? 0);
const now = Number(nowArg);
const metadata = JSON.parse(metadataArg ?? '{}') as Record<string, string>;

const { enforceRateLimits } = await import('../../functions/policies/limiter');
const subject = (meta: Record<string, string>) => ({ workspaceId: workspaceId!, organisationId: organisationId!, apiKeyId: 'key_child', metadata: meta });

// Warm-up that matches no policy: loads the policy cache and opens the connection.
await enforceRateLimits(subject({}), now);
process.stdout.write('ready\n');

let startAt = Date.now();
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const [word, at] = line.trim().split(' ');
  if (word === 'go') {
    startAt = Number(at);
    break;
  }
}
lines.close();
await new Promise((r) => setTimeout(r, Math.max(0, startAt - Date.now())));

const results: PromiseSettledResult<unknown>[] = [];
for (let round = 0; round < rounds; round++) {
  if (round > 0) await new Promise((r) => setTimeout(r, pauseMs));
  results.push(...(await Promise.allSettled(Array.from({ length: calls }, () => enforceRateLimits(subject(metadata), now)))));
}
const errors = results
  .filter((r): r is PromiseRejectedResult => r.status === 'rejected')
  .map((r) => r.reason as { status?: number; message?: string })
  .filter((e) => e.status !== 429)
  .map((e) => String(e.message));
const admitted = results.filter((r) => r.status === 'fulfilled').length;
process.stdout.write(`${JSON.stringify({ admitted, refused: results.length - admitted - errors.length, errors })}\n`);
process.exit(0);
