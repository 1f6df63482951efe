/**
 * `node bench/profile-summary.ts FILE.cpuprofile [N]`: where a V8 CPU profile (from
 * `npm run bench -- --profile DIR`) spent its time: the top N functions by self time, and the
 * project's own functions (src/) by total time (self + callees), each with file:line.
 * `FILE.heapprofile` (from `--heap-profile DIR`): the same for the bytes allocated, as V8's
 * sampling heap profiler saw them (heap-sampling.ts keeps the samples of objects collected since,
 * so these are the bytes allocated, not the bytes still alive).
 */
import { readFileSync } from 'node:fs';
import { sourcePlace } from '../scripts/source-trace.ts';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** A sampling heap profile: a tree of call frames, each with the bytes allocated in it. */
interface HeapNode {
  id: number;
  callFrame: Node['callFrame'];
  selfSize: number;
  children: HeapNode[];
}
interface HeapProfile {
  head: HeapNode;
}

/** The heap profile as a CPU profile whose one "sample" per frame weighs its bytes. */
function fromHeap(h: HeapProfile): Profile {
  const nodes: Node[] = [];
  const samples: number[] = [];
  const timeDeltas: number[] = [];
  const walk = (x: HeapNode) => {
    nodes.push({ id: x.id, callFrame: x.callFrame, children: x.children.map((c) => c.id) });
    if (x.selfSize > 0) {
      samples.push(x.id);
      timeDeltas.push(x.selfSize);
    }
    for (const c of x.children) walk(c);
  };
  walk(h.head);
  return { nodes, samples, timeDeltas, startTime: 0, endTime: 0 };
}

const file = process.argv[2];
if (!file) {
  console.error('usage: node bench/profile-summary.ts FILE.cpuprofile [N]');
  process.exit(2);
}
const n = Number(process.argv[3] ?? 30);
const raw = JSON.parse(readFileSync(file, 'utf8')) as Profile | HeapProfile;
const heap = 'head' in raw;
const p = heap ? fromHeap(raw) : raw;
const byId = new Map(p.nodes.map((x) => [x.id, x]));
const parent = new Map<number, number>();
for (const x of p.nodes) for (const c of x.children ?? []) parent.set(c, x.id);

// Self time per node from the samples and their time deltas (µs).
const self = new Map<number, number>();
for (let i = 0; i < p.samples.length; i++) {
  const id = p.samples[i]!;
  self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0));
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
// A frame's name, once per node: every sample's stack names its frames again.
const names = new Map<Node, string>();
const name = (x: Node) => {
  let known = names.get(x);
  if (known === undefined) {
    known = frameName(x);
    names.set(x, known);
  }
  return known;
};
const frameName = (x: Node) => {
  const { url: frameUrl, lineNumber, columnNumber } = x.callFrame;
  // A frame of the bundle (dist/) is named by its place in the source, as its source map says.
  const source = frameUrl.includes('/dist/')
    ? sourcePlace(frameUrl, lineNumber + 1, columnNumber + 1)
    : undefined;
  const url = source
    ? source.file.startsWith('..')
      ? source.file
      : `./${source.file}`
    : frameUrl.replace(/^file:\/\//, '').replace(process.cwd(), '.');
  const line = source ? source.line : lineNumber + 1;
  return `${x.callFrame.functionName || '(anonymous)'} ${url ? `${url}:${line}` : ''}`.trim();
};

const selfBy = new Map<string, number>();
const totalBy = new Map<string, number>();
for (const [id, us] of self) {
  const x = byId.get(id)!;
  selfBy.set(name(x), (selfBy.get(name(x)) ?? 0) + us);
  // Total time: every distinct frame on the stack of this sample gets the time once.
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const k = name(byId.get(cur)!);
    if (seen.has(k)) continue;
    seen.add(k);
    totalBy.set(k, (totalBy.get(k) ?? 0) + us);
  }
}
const pct = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
const what = heap ? 'bytes' : 'time';
console.log(
  `${file}: ${heap ? `${(total / 2 ** 20).toFixed(1)} MiB allocated` : `${(total / 1e6).toFixed(1)} s`} sampled`,
);
console.log(`\nself ${what}:`);
for (const [k, us] of [...selfBy].sort((a, b) => b[1] - a[1]).slice(0, n)) console.log(`${pct(us)}  ${k}`);
console.log(`\ntotal ${what}, project functions (src/; the bundle's frames by its source maps):`);
for (const [k, us] of [...totalBy]
  .filter(([k]) => k.includes('/src/') && !k.includes('/node_modules/'))
  .sort((a, b) => b[1] - a[1])
  .slice(0, n))
  console.log(`${pct(us)}  ${k}`);
console.log(`\ntotal ${what}, every function:`);
for (const [k, us] of [...totalBy].sort((a, b) => b[1] - a[1]).slice(0, n)) console.log(`${pct(us)}  ${k}`);
