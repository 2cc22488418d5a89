import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { BUNDLE_ENTRY_FILE, esbuildOptionsFor, loadedFiles } from '../../infra/bundling';
import { LAMBDA_NODE_OPTIONS, NODE_HEAP_OPTIONS } from '../../infra/node-options';
import { ENDPOINT_GROUPS } from '../../infra/endpoint-groups';
import { WORKERS } from '../../infra/workflows/registry';
import { median, round } from './load';
import { REPO_ROOT, TMP_DIR } from './procs';

export interface BundleInfo {
  name: string;
  /** An endpoint group's Lambda (API) or a workflow worker's (infra/workflows/registry.ts). */
  kind: 'endpoint' | 'worker';
  entry: string;
  file: string;
  /** Minified code loaded at cold start (index.mjs and the chunks it imports statically), KB = 1024 bytes. */
  sizeKb: number;
  /** All minified code of the function, chunks loaded on demand included. */
  totalKb: number;
  mapKb: number;
  /** Largest contributors to the code loaded at cold start, by package (or `functions/…` for own code). */
  top: Array<{ source: string; kb: number }>;
}

function sourceOf(input: string): string {
  const nm = input.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = input.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const parts = input.split('/');
  return parts.slice(0, 2).join('/');
}

function topSources(meta: Metafile, outputs: string[]): Array<{ source: string; kb: number }> {
  const bySource = new Map<string, number>();
  for (const output of outputs) {
    for (const [input, { bytesInOutput }] of Object.entries(meta.outputs[output]?.inputs ?? {})) {
      bySource.set(sourceOf(input), (bySource.get(sourceOf(input)) ?? 0) + bytesInOutput);
    }
  }
  return [...bySource.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6)
    .map(([source, bytes]) => ({ source, kb: round(bytes / 1024, 1) }));
}

/**
 * Every function bundled with the production settings (infra/bundling.ts) into
 * bench/.tmp/bundles: the endpoint groups, then the workflow workers.
 */
export async function bundleAll(): Promise<BundleInfo[]> {
  const out: BundleInfo[] = [];
  const all = [
    ...ENDPOINT_GROUPS.map((g) => ({ name: g.name, entry: g.entry, kind: 'endpoint' as const })),
    ...WORKERS.map((w) => ({ name: `worker:${w.name}`, entry: w.entry, kind: 'worker' as const })),
  ];
  for (const group of all) {
    const dir = resolve(TMP_DIR, 'bundles', group.name.replace(':', '-'));
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const file = resolve(dir, BUNDLE_ENTRY_FILE);
    // metafile only adds the size report; the emitted code is the same.
    const result = await build({ ...esbuildOptionsFor(resolve(REPO_ROOT, group.entry), dir), metafile: true });
    const meta = result.metafile!;
    const atColdStart = loadedFiles(meta, relative(REPO_ROOT, file));
    const code = Object.keys(meta.outputs).filter((p) => p.endsWith('.mjs'));
    const kbOf = (paths: string[]) => round(paths.reduce((n, p) => n + meta.outputs[p]!.bytes, 0) / 1024, 1);
    out.push({
      name: group.name,
      kind: group.kind,
      entry: group.entry,
      file,
      sizeKb: kbOf(atColdStart),
      totalKb: kbOf(code),
      mapKb: round(code.reduce((n, p) => n + statSync(`${resolve(REPO_ROOT, p)}.map`).size, 0) / 1024, 1),
      top: topSources(meta, atColdStart),
    });
  }
  return out;
}

/** The probe (bench/cold-child.ts) as plain JS, so the fresh processes run no TypeScript loader. */
export async function buildProbe(): Promise<string> {
  const file = resolve(TMP_DIR, 'cold-child.mjs');
  await build({
    entryPoints: [resolve(REPO_ROOT, 'bench/cold-child.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: file,
    logLevel: 'warning',
  });
  return file;
}

export interface ColdSample {
  importMs: number;
  readyMs: number;
  /** null when no request was sent (workflow workers). */
  responseMs: number | null;
  invocationMs: number | null;
  status: number | null;
  rssMb: number;
  error?: string;
}

function probeOnce(probe: string, bundle: string, env: Record<string, string>, event: unknown, nodeArgs: string[]): Promise<ColdSample> {
  return new Promise((resolveSample, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, probe, bundle], {
      cwd: TMP_DIR,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env, ...(event === undefined ? {} : { BENCH_EVENT: JSON.stringify(event) }) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-2000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      // Functions log JSON lines to stdout too; the probe's line is the last one.
      const line = out
        .trim()
        .split('\n')
        .reverse()
        .find((l) => l.includes('"importMs"'));
      if (!line) return reject(new Error(`cold-start probe failed (exit ${code}) for ${bundle}:\n${err}\n${out.slice(-1000)}`));
      resolveSample(JSON.parse(line) as ColdSample);
    });
  });
}

export interface ColdStartRow {
  name: string;
  sizeKb: number;
  runs: number;
  /** Medians, ms (with NODE_OPTIONS=--enable-source-maps, as deployed). First request: NaN when none was sent (workers). */
  importMs: number;
  initMs: number;
  firstResponseMs: number;
  firstInvocationMs: number;
  /** Median import time without --enable-source-maps. */
  importNoMapsMs: number;
  rssMb: number;
  status: number;
  error?: string;
}

/**
 * Import and first-request time of every bundle, each sample in a fresh node process,
 * alternating the functions so background load spreads evenly over them.
 */
export async function measureColdStarts(
  bundles: BundleInfo[],
  probe: string,
  env: Record<string, string>,
  events: Record<string, unknown>,
  runs: number,
): Promise<ColdStartRow[]> {
  const samples = new Map<string, { maps: ColdSample[]; noMaps: ColdSample[] }>(bundles.map((b) => [b.name, { maps: [], noMaps: [] }]));
  for (let i = 0; i < runs; i++) {
    for (const b of bundles) {
      const s = samples.get(b.name)!;
      // As deployed (NODE_OPTIONS, infra/node-options.ts), and without source maps.
      s.maps.push(await probeOnce(probe, b.file, env, events[b.name], LAMBDA_NODE_OPTIONS.split(' ')));
      s.noMaps.push(await probeOnce(probe, b.file, env, events[b.name], [...NODE_HEAP_OPTIONS]));
    }
  }
  return bundles.map((b) => {
    const { maps, noMaps } = samples.get(b.name)!;
    const m = (f: (s: ColdSample) => number | null, xs = maps) => round(median(xs.map((x) => f(x) ?? NaN)), 1);
    const last = maps[maps.length - 1]!;
    return {
      name: b.name,
      sizeKb: b.sizeKb,
      runs,
      importMs: m((s) => s.importMs),
      initMs: m((s) => s.readyMs),
      firstResponseMs: m((s) => s.responseMs),
      firstInvocationMs: m((s) => s.invocationMs),
      importNoMapsMs: m((s) => s.importMs, noMaps),
      rssMb: m((s) => s.rssMb),
      status: last.status ?? 0,
      ...(maps.find((s) => s.error) ? { error: maps.find((s) => s.error)!.error } : {}),
    };
  });
}
