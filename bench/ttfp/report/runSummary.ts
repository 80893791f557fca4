/**
 * The terminal's view of one run, as `vllm bench serve` prints it: a titled block of labelled lines, one figure
 * each (requests, duration, req/s, then mean / p50 / p99 of TTFT, TTFP, ITL, E2E, and the player's underruns),
 * that one scans top to bottom in a terminal of any width. The wide tables are for results.md only: 12-13 columns
 * (~170 characters) wrap in a 120-column terminal and become unreadable.
 */
import type { RunRow } from '../results.ts';
import { ms, num } from '../../report/format.ts';

/** Every line the terminal report prints fits this (checked by test/unit/bench-report.test.ts). */
export const REPORT_WIDTH = 100;
/** Labels are padded to this, values right-aligned after it: a two-column block like vLLM's. */
const LABEL_WIDTH = 44;
const VALUE_WIDTH = 14;
export const BLOCK_WIDTH = LABEL_WIDTH + VALUE_WIDTH;

/** `=== title ===` or `--- title ---` across the block. */
export function rule(title: string, fill: '=' | '-'): string {
  const text = ` ${title} `;
  const left = Math.max(3, Math.floor((BLOCK_WIDTH - text.length) / 2));
  return `${fill.repeat(left)}${text}${fill.repeat(Math.max(3, BLOCK_WIDTH - left - text.length))}`;
}

export function line(label: string, value: string): string {
  return `${`${label}:`.padEnd(LABEL_WIDTH)}${value.padStart(VALUE_WIDTH)}`;
}

/** What the run measured, in words: the server variant (async_chunk on or off, a config's name) and concurrency. */
export function runTitle(r: RunRow): string {
  const variant =
    r.variant === 'async' ? 'async_chunk on' : r.variant === 'sync' ? 'async_chunk off' : `config ${r.variant}`;
  return `${variant}, max concurrency ${r.concurrency}`;
}

function latency(name: string, mean: number | null, p50: number | null, p99: number | null): string[] {
  return [line(`Mean ${name} (ms)`, ms(mean)), line(`Median ${name} (ms)`, ms(p50)), line(`P99 ${name} (ms)`, ms(p99))];
}

export function runSummaryLines(r: RunRow): string[] {
  const out = [
    rule(runTitle(r), '='),
    line('Successful requests', String(r.completed)),
    line('Failed requests', String(r.failed)),
    line('Benchmark duration (s)', num(r.duration_s, 2)),
    line('Request throughput (req/s)', num(r.request_throughput, 2)),
    line('Prompt / answer length (tokens)', `${r.input_len} / ${r.output_len}`),
    line('Audio generated (s)', num(r.audio_seconds, 1)),
    rule('Time to first token', '-'),
    ...latency('TTFT', r.mean_ttft_ms, r.p50_ttft_ms, r.p99_ttft_ms),
    rule('Time to first audio packet', '-'),
    ...latency('TTFP', r.mean_ttfp_ms, r.p50_ttfp_ms, r.p99_ttfp_ms),
  ];
  if (r.mean_engine_ttfp_ms !== null || r.mean_server_ttfp_ms !== null)
    out.push(
      line('Mean TTFP in the engine (ms)', ms(r.mean_engine_ttfp_ms)),
      line('Mean TTFP in the server (ms)', ms(r.mean_server_ttfp_ms)),
    );
  if (r.ttfp_target_ms !== null)
    out.push(
      line(
        `Requests within the ${r.ttfp_target_ms} ms TTFP target`,
        r.ttfp_target_met === null ? '-' : `${(r.ttfp_target_met * 100).toFixed(0)}%`,
      ),
    );
  out.push(
    rule('Inter-token latency', '-'),
    ...latency('ITL', r.mean_itl_ms, r.p50_itl_ms, r.p99_itl_ms),
    rule('End to end', '-'),
    ...latency('E2E', r.mean_e2e_ms, r.p50_e2e_ms, r.p99_e2e_ms),
    line('Mean real-time factor (1 = real time)', num(r.mean_rtf)),
    rule('Audio playback (a player fed as it arrives)', '-'),
    line('Underruns (stalls over 100 ms)', String(r.underruns)),
    line('Requests with an underrun', String(r.requests_with_underruns)),
    line('Worst stall (ms)', ms(r.worst_stall_ms)),
  );
  if (r.slowest_ttfp && r.slowest_ttfp.length > 0)
    out.push(
      rule('Slowest first packets (TTFP, trace id)', '-'),
      ...r.slowest_ttfp.map((s) => line(`${s.request_id ?? '(no id)'} (ms)`, `${ms(s.ttfp_ms)} ${s.trace_id ?? '-'}`)),
    );
  out.push('='.repeat(BLOCK_WIDTH));
  return out;
}

/**
 * `text` as it is when it fits `width` columns, else broken at spaces into lines that do; the lines after the first
 * keep its indentation plus `indent` (a word longer than a line stays whole: a path is not cut in two).
 */
export function wrap(text: string, width = REPORT_WIDTH, indent = '    '): string[] {
  if (text.length <= width) return [text]; // as it is, aligned columns included
  const lead = /^ */.exec(text)![0];
  const lines: string[] = [];
  let current = lead;
  for (const word of text.trimStart().split(/ +/)) {
    const empty = current.trim() === '';
    const candidate = empty ? `${current}${word}` : `${current} ${word}`;
    if (candidate.length > width && !empty) {
      lines.push(current);
      current = `${lead}${indent}${word}`;
    } else current = candidate;
  }
  lines.push(current);
  return lines;
}
