import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// The layers of docs/architecture.md, top to bottom: a module imports from its own folder or
// from a lower layer, never upwards, and no set of modules imports itself round in a circle.
// Type-only imports count: a circle of types is still two modules that cannot be read apart.

const FUNCTIONS = resolve(import.meta.dirname, '../../functions');

/** Layer of each top folder of functions/ (1 is the top); `*\/handler.ts` files are entries. */
const LAYER_OF: Record<string, number> = {
  workers: 1,
  admin: 2,
  prompts: 2,
  assistants: 2,
  'fine-tuning': 2,
  files: 2,
  batches: 2,
  rerank: 2,
  mcp: 2,
  console: 2,
  gateway: 3,
  guardrails: 4,
  policies: 4,
  spend: 4,
  formats: 4,
  providers: 5,
  shared: 6,
};
const ENTRY_LAYER = 1;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** The functions/ file a relative specifier names, or undefined for a package or a file elsewhere. */
function resolveImport(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const base = resolve(dirname(from), specifier);
  const found = [base, `${base}.ts`, join(base, 'index.ts'), base.replace(/\.js$/, '.ts')].find((c) => existsSync(c) && statSync(c).isFile());
  return found?.startsWith(`${FUNCTIONS}/`) ? found : undefined;
}

/** Every module of functions/ (path relative to it) and the modules it imports, static and dynamic. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(FUNCTIONS)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = importedFiles.map((i) => resolveImport(file, i.fileName)).filter((t): t is string => t !== undefined);
    graph.set(relative(FUNCTIONS, file), [...new Set(targets.map((t) => relative(FUNCTIONS, t)))]);
  }
  return graph;
}

const isEntry = (module: string) => /^[^/]+\/handler\.ts$/.test(module);
const folderOf = (module: string) => (isEntry(module) ? module : module.split('/')[0]!);
const layerOf = (module: string) => (isEntry(module) ? ENTRY_LAYER : LAYER_OF[module.split('/')[0]!]);

/** Strongly connected components of more than one node (Tarjan): the circles. */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node)!, index.get(to)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1) found.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

const graph = importGraph();

describe('the layers of functions/ (docs/architecture.md)', () => {
  it('sees the whole tree: every top folder has a layer', () => {
    expect(graph.size).toBeGreaterThan(200);
    const folders = [...new Set([...graph.keys()].filter((m) => m.includes('/')).map((m) => m.split('/')[0]!))];
    expect(
      folders.filter((f) => LAYER_OF[f] === undefined),
      'a new folder: give it a layer here and in docs/architecture.md',
    ).toEqual([]);
  });

  it('no module imports from a higher layer, and none imports an entry', () => {
    const upward: string[] = [];
    for (const [from, targets] of graph) {
      for (const to of targets) {
        if (folderOf(from) === folderOf(to)) continue;
        if (isEntry(to) || layerOf(to)! < layerOf(from)!) upward.push(`${from} -> ${to}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('no modules import each other in a circle', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('no folders import each other in a circle (folders of one layer may import sideways, one way)', () => {
    const folders = new Map<string, Set<string>>();
    for (const [from, targets] of graph) {
      const edges = folders.get(folderOf(from)) ?? new Set<string>();
      for (const to of targets) if (folderOf(to) !== folderOf(from)) edges.add(folderOf(to));
      folders.set(folderOf(from), edges);
    }
    expect(circles(new Map([...folders].map(([f, e]) => [f, [...e]])))).toEqual([]);
  });

  it('finds a circle and an upward import when there is one (the checks can fail)', () => {
    const broken = new Map(graph);
    broken.set('shared/errors.ts', [...(graph.get('shared/errors.ts') ?? []), 'gateway/pipeline.ts']);
    expect(circles(broken).some((c) => c.includes('shared/errors.ts') && c.includes('gateway/pipeline.ts'))).toBe(true);
    expect(layerOf('gateway/pipeline.ts')!).toBeLessThan(layerOf('shared/errors.ts')!);
  });
});
