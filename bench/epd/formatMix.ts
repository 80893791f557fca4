/**
 * The report of `chorus bench --mix`, in Markdown (stdout and results.md): the workload, then per router its TTFT by
 * modality, the encoders' cache hits and busy time.
 */
import { ms, renderMarkdown, type Column } from '../report/format.ts';
import type { HitCounts, MixBenchResult, MixRun, Quantiles } from './runMixBench.ts';

const KINDS = ['overall', 'text', 'image', 'audio', 'video'] as const;

const TTFT_COLUMNS: readonly Column<{ kind: string; q: Quantiles }>[] = [
  { header: 'TTFT', cell: (r) => r.kind },
  { header: 'p50 (ms)', cell: (r) => ms(r.q.p50_ms) },
  { header: 'p99 (ms)', cell: (r) => ms(r.q.p99_ms) },
  { header: 'n', cell: (r) => String(r.q.n) },
];

function runLines(run: MixRun): string[] {
  const busy = Object.entries(run.encoder_busy_s)
    .map(([k, v]) => `${k} ${v.toFixed(2)} s`)
    .join(', ');
  const share = (c: HitCounts) => `${c.hits} of ${c.hits + c.misses}`;
  return [
    `## router ${run.router}: ${run.completed} completed, ${run.failed} failed in ${run.duration_s} s`,
    '',
    renderMarkdown(
      TTFT_COLUMNS,
      KINDS.map((kind) => ({ kind, q: run.ttft[kind] })),
    ),
    '',
    `- EC store hits ${share(run.ec_store)}; encoder cache hits ${share(run.encoder_cache)}; encoder busy ${busy}`,
    '',
  ];
}

export function formatMix(r: MixBenchResult, command: string): string {
  const w = r.workload.requests;
  return [
    '# chorus bench --mix results',
    '',
    `\`${command}\``,
    '',
    `Mixed workload: ${w.text} text, ${w.image} image, ${w.audio} audio, ${w.video} video requests ` +
      `(${r.workload.repeats} repeats), ${r.options.ratePerSecond} req/s, seed ${r.options.seed}, config ` +
      `${r.options.config}; load (1 min) ${r.load_1m.start.toFixed(1)} at start, ` +
      `${r.load_1m.end.toFixed(1)} at the end.`,
    '',
    ...r.runs.flatMap(runLines),
  ].join('\n');
}
