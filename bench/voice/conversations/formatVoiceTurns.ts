/**
 * `chorus bench --voice --turns` as the terminal shows it and results.md stores it: a table by turn index per run
 * (every turn up to 12, else 1, 2, 5, 10, 20, ... and the last; results.json has them all), with two servers a table
 * of both side by side and their ratio, then the goal, the failed turns and where the numbers came from.
 */
import { ms, num, pair, pct, provenanceOf, renderMarkdown, renderText, type Column } from '../../report/format.ts';
import {
  failureLines,
  ratioTitle,
  shown,
  sideBySide,
  tokens,
  usageColumns,
  type SideBySide,
} from '../../ttfp/turns/formatTurns.ts';
import type { VoiceTurnRow, VoiceTurnsRatio, VoiceTurnsResult, VoiceTurnsRun } from './voiceTurnsResult.ts';

const turnColumns: readonly Column<VoiceTurnRow>[] = [
  ...usageColumns,
  { header: 'Voice TTFP p50 (ms)', cell: (r) => ms(r.voice_ttfp_ms.p50) },
  { header: 'Voice TTFP / turn 1', cell: (r) => num(r.voice_ttfp_over_turn1, 2) },
  { header: 'speech_stopped p50', cell: (r) => ms(r.speech_stopped_ms.p50) },
  // No "stopped -> audio / turn 1" here (results.json has it): with the answer held from the first silence that part
  // is often a few ms, and a ratio over a few ms says nothing.
  { header: 'stopped -> audio p50', cell: (r) => ms(r.stopped_to_audio_ms.p50) },
  { header: 'VAD end lag p50', cell: (r) => ms(r.vad_end_lag_ms.p50) },
];

const comparisonColumns: readonly Column<SideBySide<VoiceTurnRow, VoiceTurnsRatio['turns'][number]>>[] = [
  { header: 'Turn', cell: (r) => String(r.a.turn) },
  { header: 'Input tokens', cell: (r) => pair(tokens(r.a.mean_input_tokens), tokens(r.b.mean_input_tokens)) },
  { header: 'Cached share', cell: (r) => pair(pct(r.a.cached_share), pct(r.b.cached_share)) },
  { header: 'Voice TTFP p50 (ms)', cell: (r) => pair(ms(r.a.voice_ttfp_ms.p50), ms(r.b.voice_ttfp_ms.p50)) },
  { header: 'Voice TTFP ratio', cell: (r) => num(r.ratio.voice_ttfp, 2) },
  {
    header: 'stopped -> audio p50',
    cell: (r) => pair(ms(r.a.stopped_to_audio_ms.p50), ms(r.b.stopped_to_audio_ms.p50)),
  },
  { header: 'stopped -> audio ratio', cell: (r) => num(r.ratio.stopped_to_audio, 2) },
  {
    header: 'Voice TTFP / turn 1',
    cell: (r) => pair(num(r.a.voice_ttfp_over_turn1, 2), num(r.b.voice_ttfp_over_turn1, 2)),
  },
  { header: 'Failed', cell: (r) => pair(String(r.a.failed), String(r.b.failed)) },
];

function runTitle(run: VoiceTurnsRun): string {
  const speech = run.speech_ms === null ? '' : `, utterances of ${(run.speech_ms / 1000).toFixed(1)} s`;
  return (
    `${run.variant}, voice, c=${run.concurrency}: ${run.conversations} conversations x ` +
    `${run.turns_per_conversation} turns, ${run.completed} answered, ${run.failed} failed, ` +
    `${run.duration_s.toFixed(1)} s${speech}`
  );
}

function goalLines(r: VoiceTurnsResult): string[] {
  return r.goals.map((g) => `${g.name}: ${g.value.toFixed(2)} (goal ${g.target}, ${g.met ? 'met' : 'not met'})`);
}

function provenance(r: VoiceTurnsResult): string {
  const o = r.options;
  return (
    `${provenanceOf(r)}; answers of ${o.output_len} tokens, ` +
    `silence_duration_ms ${o.silence_duration_ms}, warm-up ${o.warmup}, seed ${o.seed}` +
    (o.interleaved ? '; both servers up, each concurrency run in halves A B B A' : '')
  );
}

const DEFINITIONS =
  'Voice TTFP: the send of the last speech sample -> the first response.output_audio.delta (client clock), ' +
  'silence_duration_ms included. speech_stopped: the last speech sample -> input_audio_buffer.speech_stopped. ' +
  "stopped -> audio: speech_stopped -> the first audio delta. Input and cached tokens: means of response.done's " +
  'usage (input_tokens, input_token_details.cached_tokens) over the answered turns. / turn 1: the p50 over turn ' +
  "1's. Times in ms.";

/** `goals`: the development goal of bench/TURNS.md, met or not (`--goals`); results.md always has it. */
export function formatVoiceTurnsText(r: VoiceTurnsResult, options: { readonly goals?: boolean } = {}): string {
  const out: string[] = [];
  for (const run of r.runs) out.push(runTitle(run), renderText(turnColumns, shown(run.turns, r.options.turns)), '');
  for (const x of r.ratios) out.push(ratioTitle(x), renderText(comparisonColumns, sideBySide(r, x)), '');
  const goals = options.goals ? goalLines(r) : [];
  if (goals.length > 0) out.push('development goal (bench/TURNS.md):', ...goals.map((l) => `  ${l}`), '');
  const failures = failureLines(r.runs);
  if (failures.length > 0) out.push('failed turns:', ...failures.map((l) => `  ${l}`), '');
  out.push(provenance(r));
  return out.join('\n');
}

export function formatVoiceTurnsMarkdown(r: VoiceTurnsResult): string {
  const out = ['# chorus bench --voice --turns results', '', `\`${r.command}\``, '', provenance(r)];
  for (const run of r.runs)
    out.push('', `**${runTitle(run)}**`, '', renderMarkdown(turnColumns, shown(run.turns, r.options.turns)));
  for (const x of r.ratios)
    out.push('', `**${ratioTitle(x)}**`, '', renderMarkdown(comparisonColumns, sideBySide(r, x)));
  const section = (title: string, lines: string[]) => {
    if (lines.length > 0) out.push('', `**${title}**`, '', ...lines.map((l) => `- ${l}`));
  };
  section('Goal', goalLines(r));
  section('Failed turns', failureLines(r.runs));
  out.push('', DEFINITIONS);
  return `${out.join('\n')}\n`;
}
