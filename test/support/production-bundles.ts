import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { inject } from 'vitest';
import { esbuildOptionsFor, REPO_ROOT } from '../../infra/bundling';
import { ENDPOINT_GROUPS } from '../../infra/endpoint-groups';
import { BOOTSTRAP_WORKER } from '../../infra/stacks/bootstrap-stack';
import { WORKERS } from '../../infra/workflows/registry';
import { sharedBundlesRoot } from './shared-dirs';

/** Every function the stacks deploy: endpoint groups, workflow workers and the bootstrap custom resource. */
export const DEPLOYED_FUNCTIONS = [
  ...ENDPOINT_GROUPS.map((g) => ({ name: g.name, entry: g.entry })),
  ...WORKERS.map((w) => ({ name: w.name, entry: w.entry })),
  { name: BOOTSTRAP_WORKER.name, entry: BOOTSTRAP_WORKER.entry },
];

const METAFILE = 'metafile.json';

/**
 * Every deployed function as a production bundle (infra/bundling.ts's esbuild settings, each
 * in its own folder with its esbuild metafile), built once per test run and shared by the
 * files that read or serve them: a build costs about 20 s of CPU, and the suite is
 * CPU-bound. The first caller builds under a lock (an atomic mkdir), the others wait for the
 * result. The folder is read-only for its readers; global-setup.ts removes it.
 */
export async function sharedProductionBundles(): Promise<string> {
  const root = sharedBundlesRoot(inject('testRunId'));
  const built = join(root, 'functions');
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
        await Promise.all(
          DEPLOYED_FUNCTIONS.map(async (fn) => {
            const outdir = join(staging, fn.name);
            const result = await build({ ...esbuildOptionsFor(resolve(REPO_ROOT, fn.entry), outdir), metafile: true });
            writeFileSync(join(outdir, METAFILE), JSON.stringify(result.metafile));
          }),
        );
        renameSync(staging, built);
      }
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
  return built;
}

/** A function's shared bundle: its folder and its metafile (output paths as they were built, relative to the repository). */
export async function sharedBundleOf(name: string): Promise<{ dir: string; builtAs: string; metafile: Metafile }> {
  const dir = join(await sharedProductionBundles(), name);
  const metafile = JSON.parse(readFileSync(join(dir, METAFILE), 'utf8')) as Metafile;
  // Built in a staging folder, then renamed: the metafile's paths name the staging folder.
  const entry = Object.keys(metafile.outputs).find((p) => p.endsWith(`/${name}/index.mjs`))!;
  return { dir, builtAs: resolve(REPO_ROOT, entry.slice(0, -'/index.mjs'.length)), metafile };
}

/** The endpoint groups' bundles, copied for a file that serves them (and may change them); the caller removes the copy. */
export async function productionBundlesCopy(): Promise<string> {
  const built = await sharedProductionBundles();
  const copy = mkdtempSync(join(tmpdir(), 'gateway-bundles-'));
  for (const group of ENDPOINT_GROUPS) cpSync(join(built, group.name), join(copy, group.name), { recursive: true });
  return copy;
}

/** Every file of a folder, recursively, as absolute paths. */
export const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name));
