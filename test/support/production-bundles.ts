import { cpSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { inject } from 'vitest';
import { esbuildOptionsFor, REPO_ROOT } from '../../infra/bundling';
import { ENDPOINT_GROUPS } from '../../infra/endpoint-groups';
import { sharedBundlesRoot } from './shared-dirs';

/**
 * The endpoint groups as production bundles (infra/bundling.ts's esbuild settings), built
 * once per test run and shared by the files that serve them: a build costs about 15 s of
 * CPU, and the suite is CPU-bound. The first caller builds under a lock (an atomic mkdir),
 * the others wait for the result. Each caller gets its own copy, which it may change and
 * must remove.
 */
export async function productionBundlesCopy(): Promise<string> {
  const root = sharedBundlesRoot(inject('testRunId'));
  const built = join(root, 'endpoint-groups');
  const lock = `${built}.lock`;
  mkdirSync(root, { recursive: true });
  const deadline = Date.now() + 240_000;
  while (!existsSync(built)) {
    if (Date.now() > deadline) throw new Error(`the shared production bundles did not appear in ${built}`);
    let holder = false;
    try {
      mkdirSync(lock);
      holder = true;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
    if (!holder) continue;
    try {
      if (!existsSync(built)) {
        const staging = `${built}.${process.pid}`;
        await Promise.all(ENDPOINT_GROUPS.map((g) => build(esbuildOptionsFor(resolve(REPO_ROOT, g.entry), join(staging, g.name)))));
        renameSync(staging, built);
      }
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
  const copy = mkdtempSync(join(tmpdir(), 'gateway-bundles-'));
  cpSync(built, copy, { recursive: true });
  return copy;
}
