// A process that loads a Lambda entry, as an execution environment of Lambda Managed
// Instances does, with a value held back by busy invocations that takes 300 ms to write
// (test/integration/shutdown-signal.test.ts sends it SIGTERM).
import '../../infra/local/awslambda-shim';
import { registerHolder } from '../../functions/shared/telemetry/invocations';

await import('../../functions/shared/http/lambda-entry');
let held = true;
registerHolder(async () => {
  if (!held) return;
  await new Promise((r) => setTimeout(r, 300));
  held = false;
  process.stdout.write('held values written\n');
});
process.stdout.write('ready\n');
// Waiting for invocations, as a runtime does.
setInterval(() => undefined, 60_000);
