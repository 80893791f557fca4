/**
 * The voice bench's result as the terminal shows it and as results.md stores it: one row per concurrency, where a
 * c=1 voice turn's time goes beside the typed turn's, the goal, and where the numbers came from.
 */
import { ms, num, provenanceOf, renderMarkdown, renderText, type Column } from '../report/format.ts';
import type { Spread, VoiceBenchResult, VoiceRunRow } from './voiceResults.ts';

const pair = (s: Spread, f: (v: number | null) => string = ms) => `${f(s.p50)} / ${f(s.p90)}`;
const minus = (a: number | null, b: number) => (a === null || !Number.isFinite(b) ? null : a - b);
const tokens = (v: number | null) => (v === null ? '-' : v.toFixed(0));

const columns: readonly Column<VoiceRunRow>[] = [
  { header: 'Max concurrency', cell: (r) => String(r.concurrency) },
  {
    header: 'Turns voice / text',
    cell: (r) => {
      const failed = r.voice_failed + r.text_failed;
      return `${r.voice_completed} / ${r.text_completed}${failed > 0 ? ` (+${failed} failed)` : ''}`;
    },
  },
  { header: 'Voice TTFP p50 / p90', cell: (r) => pair(r.voice_ttfp_ms) },
  { header: 'minus silence p50 / p90', cell: (r) => pair(r.voice_ttfp_minus_silence_ms) },
  { header: 'speech_stopped p50 / p90', cell: (r) => pair(r.speech_stopped_ms) },
  { header: 'VAD end lag p50', cell: (r) => ms(r.vad_end_lag_ms.p50) },
  { header: 'stopped -> audio p50 / p90', cell: (r) => pair(r.stopped_to_audio_ms) },
  { header: 'Text TTFP p50 / p90', cell: (r) => pair(r.text_ttfp_ms) },
  { header: 'voice/text p50 / p90', cell: (r) => pair(r.voice_over_text, (v) => num(v, 2)) },
  {
    header: 'engine TTFP voice / text',
    cell: (r) => `${ms(r.engine_ttfp_ms.voice.p50)} / ${ms(r.engine_ttfp_ms.text.p50)}`,
  },
  { header: 'loop delay p99', cell: (r) => ms(r.event_loop_delay_p99_ms) },
  {
    header: 'prompt tokens voice / text',
    cell: (r) => `${tokens(r.prompt_tokens.voice)} / ${tokens(r.prompt_tokens.text)}`,
  },
];

function breakdownLines(r: VoiceBenchResult): string[] {
  const b = r.breakdown;
  if (!b) return [];
  const lines = [
    `end of speech -> speech_stopped: ${ms(b.speech_stopped_ms)} = silence_duration_ms ${b.silence_duration_ms} + ` +
      `the VAD's end of speech after the signal's ${ms(b.vad_end_lag_ms)} + detection ` +
      `${ms(minus(b.speech_stopped_ms, b.silence_duration_ms + (b.vad_end_lag_ms ?? NaN)))} (32 ms windows, ` +
      `20 ms appends, the VAD's round trip)`,
    `speech_stopped -> first audio: ${ms(b.stopped_to_audio_ms)}, against ${ms(b.text_ttfp_ms)} for the typed ` +
      `sentence's whole TTFP`,
    `engine TTFP (generate() -> first audio in main): voice ${ms(b.engine_ttfp_ms.voice)}, text ` +
      `${ms(b.engine_ttfp_ms.text)}`,
    `prompt: ${tokens(b.prompt_tokens.voice)} rows (the utterance's audio rows and the template) against ` +
      `${tokens(b.prompt_tokens.text)} tokens typed`,
  ];
  const e = b.encode;
  if (e)
    lines.push(
      `encode of the utterance alone (${(e.audio_ms / 1000).toFixed(2)} s as committed, ${e.rows} rows): front end ` +
        `${ms(e.front_end_ms)} + audio encoder ${ms(e.encoder_ms)} = ${ms(e.front_end_ms + e.encoder_ms)}`,
    );
  const [v, t] = [b.limit_voice, b.limit_text];
  if (v && t)
    lines.push(
      `first-packet limit alone at ${v.prompt_tokens} rows: ${ms(v.median.total_ms)} (thinker prefill ` +
        `${ms(v.median.thinker_prefill_ms)}, talker prefill ${ms(v.median.talker_prefill_ms)}); at ` +
        `${t.prompt_tokens} tokens: ${ms(t.median.total_ms)} (${ms(t.median.thinker_prefill_ms)}, ` +
        `${ms(t.median.talker_prefill_ms)})`,
    );
  return lines;
}

function goalLines(r: VoiceBenchResult): string[] {
  const lines = r.goals.map((g) => `${g.name}: ${g.value.toFixed(2)} (goal ${g.target}, ${g.met ? 'met' : 'not met'})`);
  if (r.goal_note) lines.push(r.goal_note);
  return lines;
}

function errorLines(r: VoiceBenchResult): string[] {
  return r.runs.flatMap((run) => run.errors.map((e) => `c=${run.concurrency} ${e}`));
}

function provenance(r: VoiceBenchResult): string {
  const o = r.options;
  return (
    `${provenanceOf(r)}; ${o.num_prompts} prompts, answers of ` +
    `${o.output_len} tokens, silence_duration_ms ${o.silence_duration_ms}, warm-up ${o.warmup}, seed ${o.seed}`
  );
}

const DEFINITIONS =
  'Voice TTFP: the send of the last speech sample -> the first response.output_audio.delta (client clock); minus ' +
  'silence: the same less silence_duration_ms, which the VAD must wait out. speech_stopped: the last speech sample ' +
  '-> input_audio_buffer.speech_stopped. Text TTFP: conversation.item.create of the same sentence -> the first ' +
  'audio delta. Engine TTFP: generate() -> the first audio in main (in-process server only). Times in ms.';

/** `goals`: the development goals of bench/README.md, met or not (`--goals`); results.md always has them. */
export function formatVoiceText(r: VoiceBenchResult, options: { readonly goals?: boolean } = {}): string {
  const out = [renderText(columns, r.runs)];
  const section = (title: string, lines: string[]) => {
    if (lines.length > 0) out.push('', title, ...lines.map((l) => `  ${l}`));
  };
  section('where the time goes at the lowest concurrency (medians, ms):', breakdownLines(r));
  if (options.goals) section('development goal (bench/README.md):', goalLines(r));
  section('failed turns:', errorLines(r));
  out.push('', provenance(r));
  return out.join('\n');
}

export function formatVoiceMarkdown(r: VoiceBenchResult): string {
  const out = ['# chorus bench --voice results', '', `\`${r.command}\``, '', provenance(r), ''];
  out.push(renderMarkdown(columns, r.runs));
  const section = (title: string, lines: string[]) => {
    if (lines.length > 0) out.push('', `**${title}**`, '', ...lines.map((l) => `- ${l}`));
  };
  section('Where the time goes at the lowest concurrency (medians, ms)', breakdownLines(r));
  section('Goal', goalLines(r));
  section('Failed turns', errorLines(r));
  out.push('', DEFINITIONS);
  return `${out.join('\n')}\n`;
}
