/** The first-packet limit's result (bench/limit/runLimit.ts measures it) and its table (pure: the reports read it). */

export interface LimitParts {
  readonly thinker_prefill_ms: number;
  readonly thinker_decode_ms: number;
  readonly talker_prefill_ms: number;
  readonly talker_decode_ms: number;
  readonly code2wav_ms: number;
  readonly total_ms: number;
  /**
   * The process's CPU time over the whole packet (every thread): beside total_ms it says whether the runs had a core
   * throughout, so it compares with the stages' model CPU time in the first packet's account.
   */
  readonly cpu_ms?: number;
}

export interface LimitResult {
  readonly batch: number;
  readonly prompt_tokens: number;
  readonly input_len: number;
  readonly initial_chunk_frames: number;
  readonly thinker_decode_steps: number;
  readonly talker_decode_steps: number;
  readonly repeats: number;
  /** Medians over the repeats, part by part (so the parts need not add up to total exactly). */
  readonly median: LimitParts;
  readonly p99_total_ms: number;
  readonly min_total_ms: number;
}

export function formatLimit(r: LimitResult): string {
  const m = r.median;
  const x = r.batch > 1 ? `${r.batch} x ` : '';
  const rows: [string, number][] = [
    [`thinker prefill (${x}${r.prompt_tokens} tokens)`, m.thinker_prefill_ms],
    [`thinker decode (${r.thinker_decode_steps} step${r.thinker_decode_steps === 1 ? '' : 's'})`, m.thinker_decode_ms],
    [`talker prefill (${x}${r.prompt_tokens + 1} rows, frame 0)`, m.talker_prefill_ms],
    [`talker frames 1..${r.initial_chunk_frames - 1} (${r.talker_decode_steps} steps)`, m.talker_decode_ms],
    [`code2wav (${x}${r.initial_chunk_frames} frames)`, m.code2wav_ms],
    ['limit (sum)', m.total_ms],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return [
    `critical path of the first audio packet${r.batch > 1 ? ` of ${r.batch} requests batched together` : ''}: ` +
      `medians of ${r.repeats} runs on the runners, one process, no runtime (IC ${r.initial_chunk_frames} frames)`,
    ...rows.map(([label, ms]) => `  ${label.padEnd(width)}  ${ms.toFixed(2).padStart(8)} ms`),
    `  (limit min ${r.min_total_ms.toFixed(2)} ms, p99 ${r.p99_total_ms.toFixed(2)} ms` +
      `${m.cpu_ms === undefined ? '' : `; the process's CPU in a packet ${m.cpu_ms.toFixed(2)} ms`})`,
  ].join('\n');
}
