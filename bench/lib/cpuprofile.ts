import { readFileSync } from 'node:fs';

/** The parts of a V8 .cpuprofile (node --cpu-prof) the summary reads. */
interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }>;
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileEntry {
  name: string;
  ms: number;
  pct: number;
}

export interface ProfileSummary {
  totalMs: number;
  /** Share of samples that were not idle. */
  busyMs: number;
  selfByFunction: ProfileEntry[];
  selfByArea: ProfileEntry[];
  /** Time with the frame anywhere on the stack (own code only), each sample counted once per frame. */
  inclusiveOwn: ProfileEntry[];
  /**
   * Self time charged to the nearest package or own module on the stack, so Node.js
   * internals count for whoever called them (an SDK call's HTTP and crypto work counts as
   * "AWS SDK"). Samples with no such caller stay as node internals or V8 pseudo-frames.
   */
  byCaller: ProfileEntry[];
}

/** The library or own module a frame belongs to, for `byCaller`; undefined for Node.js internals. */
function callerOf(url: string): string | undefined {
  if (/node_modules\/(@smithy|@aws-sdk)\//.test(url)) return 'AWS SDK (@aws-sdk, @smithy)';
  if (/node_modules\/@aws-lambda-powertools\/logger/.test(url)) return 'powertools logger';
  if (/node_modules\/@aws-lambda-powertools\//.test(url)) return 'powertools metrics/commons';
  if (/node_modules\/(tsx|esbuild|get-tsconfig)\//.test(url)) return 'tsx loader (start-up)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  const own = /\/(functions\/[^/]+(?:\/[^/.]+)?|infra\/local\/[^/.]+|bench\/[^/.]+)/.exec(url);
  return own ? own[1] : undefined;
}

/** Where a frame's code lives: a package, a repo folder, a Node.js internal module, or a V8 pseudo-frame. */
export function areaOf(url: string, name: string): string {
  if (!url) return `(${name.replace(/[()]/g, '') || 'native'})`;
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) {
    const parts = url.slice('node:'.length).split('/');
    return `node:${parts[0] === 'internal' ? parts.slice(1, 2).join('/') : parts[0]}`;
  }
  const m = /\/work\/[^/]+\/(.+)$/.exec(url) ?? /^file:\/\/.*?\/((?:functions|infra|bench|test)\/.+)$/.exec(url);
  return m ? m[1]!.replace(/^main\//, '') : url;
}

const short = (url: string) => url.replace(/^file:\/\/.*?\/((?:functions|infra|bench|test|node_modules)\/)/, '$1');

export function summariseProfile(file: string, top = 25): ProfileSummary {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  const self = new Map<string, number>();
  const area = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const byCaller = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const ms = (p.timeDeltas[i + 1] ?? p.timeDeltas[i] ?? 0) / 1000;
    const node = byId.get(p.samples[i]!)!;
    const { functionName, url, lineNumber } = node.callFrame;
    total += ms;
    if (functionName === '(idle)') {
      idle += ms;
      continue;
    }
    const key = `${functionName || '(anonymous)'} ${url ? `${short(url)}:${lineNumber + 1}` : ''}`.trim();
    self.set(key, (self.get(key) ?? 0) + ms);
    const a = areaOf(url, functionName);
    area.set(a, (area.get(a) ?? 0) + ms);
    let caller: string | undefined;
    for (let id: number | undefined = node.id; id !== undefined && !caller; id = parent.get(id)) caller = callerOf(byId.get(id)!.callFrame.url);
    caller ??= url ? 'node internals (no JS caller: socket/stream callbacks)' : `(${functionName.replace(/[()]/g, '') || 'native'})`;
    byCaller.set(caller, (byCaller.get(caller) ?? 0) + ms);
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const f = byId.get(id)!.callFrame;
      if (!/\/(functions|infra\/local)\//.test(f.url)) continue;
      const k = `${f.functionName || '(anonymous)'} ${short(f.url)}:${f.lineNumber + 1}`;
      if (seen.has(k)) continue;
      seen.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + ms);
    }
  }
  const busy = total - idle;
  const list = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, ms]) => ({ name, ms: Math.round(ms), pct: Math.round((ms / busy) * 1000) / 10 }));
  return {
    totalMs: Math.round(total),
    busyMs: Math.round(busy),
    selfByFunction: list(self),
    selfByArea: list(area),
    inclusiveOwn: list(inclusive),
    byCaller: list(byCaller),
  };
}

export function renderProfile(s: ProfileSummary): string {
  const section = (title: string, rows: ProfileEntry[]) =>
    [`${title}`, ...rows.map((r) => `  ${String(r.pct).padStart(5)} %  ${String(r.ms).padStart(6)} ms  ${r.name}`)].join('\n');
  return [
    `profile: ${s.totalMs} ms sampled, ${s.busyMs} ms busy (percentages are of busy time)`,
    section('self time charged to the nearest library / own module on the stack:', s.byCaller),
    section('self time by area (package / file / node internals):', s.selfByArea),
    section('self time by function:', s.selfByFunction),
    section('inclusive time, own code (functions/, infra/local/):', s.inclusiveOwn),
  ].join('\n\n');
}
