/**
 * What tracing costs each process, from the CPU profiles bench/tracing/cpuProfileHook.mjs wrote: the share of the
 * process's busy samples whose innermost JavaScript frame is OpenTelemetry's or src/tracing's (so the engine's own
 * generate(), called inside traceGenerate, is not counted), split by the outermost tracing frame: the hook that
 * started the work (StageSpans.step, the batch processor's export...). Idle samples are left out; busy time is the
 * thread's samples, which on a loaded machine include time it waited for a core, so read shares, not milliseconds.
 *
 *   node --import tsx bench/tracing/profileShares.ts DIR [entries]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string };
  readonly children?: readonly number[];
}
interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

const TRACING_URL = /@opentelemetry|\/src\/tracing\//;
/** Node's own modules and native frames: they run for whoever called them. */
const isJsFile = (url: string) => url !== '' && !url.startsWith('node:');

function label(node: ProfileNode): string {
  const where = node.callFrame.url
    .replace(/^.*node_modules\//, '')
    .replace(/^file:\/\/.*?\/(src|stages|transport)\//, '$1/');
  return `${node.callFrame.functionName || '(anonymous)'} ${where}`;
}

function tracingShare(profile: CpuProfile): { busyMs: number; tracingMs: number; entries: Map<string, number> } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  let busyMs = 0;
  let tracingMs = 0;
  const entries = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    if (byId.get(id)!.callFrame.functionName === '(idle)') return;
    busyMs += ms;
    const stack: ProfileNode[] = [];
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) stack.push(byId.get(cur)!);
    const innermost = stack.find((n) => isJsFile(n.callFrame.url));
    if (!innermost || !TRACING_URL.test(innermost.callFrame.url)) return;
    tracingMs += ms;
    // Outward from the innermost frame while the frames are tracing's (or Node's, which it called).
    let outer = innermost;
    for (const n of stack.slice(stack.indexOf(innermost))) {
      if (TRACING_URL.test(n.callFrame.url)) outer = n;
      else if (isJsFile(n.callFrame.url)) break;
    }
    entries.set(label(outer), (entries.get(label(outer)) ?? 0) + ms);
  });
  return { busyMs, tracingMs, entries };
}

const [dir, shown = '4'] = process.argv.slice(2);
if (!dir) throw new Error('usage: node --import tsx bench/tracing/profileShares.ts DIR [entries]');
{
  let allBusy = 0;
  let allTracing = 0;
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .sort()) {
    const { busyMs, tracingMs, entries } = tracingShare(JSON.parse(readFileSync(join(dir, file), 'utf8')));
    allBusy += busyMs;
    allTracing += tracingMs;
    const share = ((100 * tracingMs) / busyMs).toFixed(2);
    process.stdout.write(`${file}: busy ${busyMs.toFixed(0)} ms, tracing ${tracingMs.toFixed(1)} ms (${share}%)\n`);
    for (const [entry, ms] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, Number(shown)))
      process.stdout.write(`  ${ms.toFixed(1).padStart(8)} ms  ${entry}\n`);
  }
  process.stdout.write(`all processes: tracing ${((100 * allTracing) / allBusy).toFixed(2)}% of busy samples\n`);
}
