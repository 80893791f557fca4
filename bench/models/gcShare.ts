/**
 * `node --import tsx bench/models/gcShare.ts PROFILE.cpuprofile [--top N]` — where a V8 CPU profile (node
 * --cpu-prof) spent its time: the garbage collector's share of the sampled time, and the functions with the most
 * self time. Used for the allocation-free decode steps (bench/README.md).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Self time per node id (µs), from the sample stream: each sample's delta is charged to the node it hit. */
export function selfTimes(profile: CpuProfile): Map<number, number> {
  const out = new Map<number, number>();
  profile.samples.forEach((id, i) => out.set(id, (out.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  return out;
}

const { values, positionals } = parseArgs({
  options: { top: { type: 'string', default: '8' } },
  allowPositionals: true,
});
if (positionals.length !== 1) {
  process.stderr.write('usage: gcShare.ts PROFILE.cpuprofile [--top N]\n');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(positionals[0], 'utf8')) as CpuProfile;
const self = selfTimes(profile);
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const byName = new Map<string, number>();
for (const [id, us] of self) {
  const f = byId.get(id)!.callFrame;
  const name = f.url
    ? `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`
    : f.functionName;
  byName.set(name, (byName.get(name) ?? 0) + us);
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
const idle = byName.get('(idle)') ?? 0;
const busy = total - idle;
const gc = byName.get('(garbage collector)') ?? 0;
const pct = (us: number) => `${((100 * us) / busy).toFixed(1)}%`;
const lines = [
  `sampled ${(total / 1000).toFixed(0)} ms, busy ${(busy / 1000).toFixed(0)} ms; garbage collector ` +
    `${(gc / 1000).toFixed(0)} ms = ${pct(gc)} of busy`,
  ...[...byName.entries()]
    .filter(([name]) => name !== '(idle)')
    .sort((a, b) => b[1] - a[1])
    .slice(0, Number(values.top))
    .map(([name, us]) => `  ${pct(us).padStart(6)}  ${(us / 1000).toFixed(0).padStart(6)} ms  ${name}`),
];
process.stdout.write(`${lines.join('\n')}\n`);
