/**
 * The report of `chorus bench --mix`: a table per router, the goal lines issue 11 sets (measured within one run),
 * and DIR/results.json + results.md.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gitSha } from '../common.ts';
import type { HitCounts, MixBenchResult, MixRun } from './runMixBench.ts';

/** Text TTFT p99 with `ttft` routing at most this share of `least_loaded`'s. */
export const TEXT_P99_GOAL = 0.7;
/** A repeated 30 s clip's TTFT at most this many times a text prompt of equal token count. */
export const REPEAT_CLIP_GOAL = 1.2;

export interface MixGoals {
  /** ttft's text TTFT p99 / least_loaded's (null unless both ran). */
  readonly text_p99_ratio: number | null;
  readonly text_p99_met: boolean | null;
  /** Per router: repeated clip TTFT / equal-length text TTFT. */
  readonly repeat_clip_ratio: Record<string, number | null>;
  readonly repeat_clip_met: Record<string, boolean | null>;
}

const ratio = (a: number | null, b: number | null) => (a !== null && b !== null && b > 0 ? a / b : null);

export function mixGoals(r: MixBenchResult): MixGoals {
  const by = new Map(r.runs.map((run) => [run.router, run]));
  const textRatio = ratio(by.get('ttft')?.text_ttft_p99_ms ?? null, by.get('least_loaded')?.text_ttft_p99_ms ?? null);
  const clip = Object.fromEntries(
    r.runs.map((run) => [run.router, ratio(run.repeat_clip_ttft_ms, run.equal_text_ttft_ms)]),
  );
  return {
    text_p99_ratio: textRatio === null ? null : Number(textRatio.toFixed(3)),
    text_p99_met: textRatio === null ? null : textRatio <= TEXT_P99_GOAL,
    repeat_clip_ratio: Object.fromEntries(
      Object.entries(clip).map(([k, v]) => [k, v === null ? null : Number(v.toFixed(3))]),
    ),
    repeat_clip_met: Object.fromEntries(
      Object.entries(clip).map(([k, v]) => [k, v === null ? null : v <= REPEAT_CLIP_GOAL]),
    ),
  };
}

const ms = (v: number | null) => (v === null ? '-' : v.toFixed(0));

function runLines(run: MixRun): string[] {
  const busy = Object.entries(run.encoder_busy_s)
    .map(([k, v]) => `${k} ${v.toFixed(2)} s`)
    .join(', ');
  const share = (c: HitCounts) => `${c.hits} of ${c.hits + c.misses}`;
  return [
    `router ${run.router}: ${run.completed} completed, ${run.failed} failed in ${run.duration_s} s`,
    '  TTFT ms      p50     p99      n',
    ...(['overall', 'text', 'image', 'audio', 'video'] as const).map((k) => {
      const q = run.ttft[k];
      return `  ${k.padEnd(9)} ${ms(q.p50_ms).padStart(6)}  ${ms(q.p99_ms).padStart(6)}  ${String(q.n).padStart(5)}`;
    }),
    `  EC store hits ${share(run.ec_store)}; encoder cache hits ${share(run.encoder_cache)}; encoder busy ${busy}`,
    `  text TTFT minus the router's prediction: p50 ${ms(run.text_prediction_error_ms.p50_ms)} ms, p99 ` +
      `${ms(run.text_prediction_error_ms.p99_ms)} ms`,
    `  idle probe: 30 s clip sent again ${ms(run.repeat_clip_ttft_ms)} ms (${run.repeat_clip_prompt_tokens} tokens), ` +
      `text of ${run.equal_text_prompt_tokens} tokens ${ms(run.equal_text_ttft_ms)} ms`,
  ];
}

export function formatMix(r: MixBenchResult, goals: MixGoals): string {
  const w = r.workload.requests;
  const lines = [
    `mixed workload: ${w.text} text, ${w.image} image, ${w.audio} audio, ${w.video} video requests ` +
      `(${r.workload.repeats} repeats), ` +
      `${r.options.ratePerSecond} req/s, seed ${r.options.seed}, config ${r.options.config}; load (1 min) ` +
      `${r.load_1m.start.toFixed(1)} at start, ${r.load_1m.end.toFixed(1)} at the end`,
    ...r.runs.flatMap(runLines),
    `goal: text TTFT p99 ttft / least_loaded <= ${TEXT_P99_GOAL}: ` +
      (goals.text_p99_ratio === null
        ? 'not measured (run both routers)'
        : `${goals.text_p99_ratio} (${goals.text_p99_met ? 'met' : 'MISSED'})`),
    ...Object.entries(goals.repeat_clip_ratio).map(
      ([router, v]) =>
        `goal: repeated 30 s clip TTFT / equal-length text <= ${REPEAT_CLIP_GOAL} (${router}): ` +
        (v === null ? '-' : `${v} (${goals.repeat_clip_met[router] ? 'met' : 'MISSED'})`),
    ),
  ];
  return lines.join('\n');
}

export async function writeMixResults(out: string, r: MixBenchResult, goals: MixGoals, command: string) {
  await mkdir(out, { recursive: true });
  const json = path.join(out, 'results.json');
  const markdown = path.join(out, 'results.md');
  const cpu = os.cpus();
  const machine = { cpu: cpu[0]?.model ?? 'unknown', cores: cpu.length, node: process.version, git_sha: gitSha() };
  const runs = r.runs.map(({ requests: _requests, ...run }) => run);
  const body = { command, date: new Date().toISOString(), machine, ...r, runs, goals };
  await writeFile(json, `${JSON.stringify(body, null, 2)}\n`);
  const requests = path.join(out, 'requests.json');
  await writeFile(
    requests,
    `${JSON.stringify(r.runs.map((run) => ({ router: run.router, requests: run.requests })))}\n`,
  );
  await writeFile(markdown, `# ${command}\n\n\`\`\`\n${formatMix(r, goals)}\n\`\`\`\n`);
  return { json, markdown, requests };
}
