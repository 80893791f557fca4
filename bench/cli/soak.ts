/**
 * `chorus soak`: sessions against a pipeline for a while, every answer checked, with chaos on demand
 * (bench/soak/runSoak.ts). Exit 0 when no answer differs from its reference and nothing outlived the run.
 * `chorus soak --turns N`: long conversations against `chorus serve` in a child process, the server's memory per
 * process (bench/soak/runTurnsSoak.ts). Exit 0 when no turn failed and nothing outlived the run.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { defaultConfigPath, intFlag, UsageError, logger } from '../../src/basics.ts';
import { runSoak, type ChaosAt } from '../soak/runSoak.ts';
import { runTurnsSoak, type TurnsSoakOptions } from '../soak/runTurnsSoak.ts';
import { formatTurnsSoak } from '../soak/formatTurnsSoak.ts';
import { RSS_BASELINE_TURN } from '../soak/turnsSoakReport.ts';

export const usage = `usage: chorus soak [--config FILE] [--seconds 60] [--sessions 8] [--max-tokens 12] [--seed 0]
                  [--abort-storm] [--kill-stage NAME@SECONDS]... [--stop-stage NAME@SECONDS]... [--fuzz] [--json]
       chorus soak --turns N [--config FILE] [--sessions 1] [--max-tokens 12] [--thinker-positions P]
                  [--input-words 40] [--rss-baseline-turn 20] [--seed 0] [--json] [--out FILE]

Runs Realtime sessions against the pipeline of FILE (default configs/tiny-omni.yaml), started in this process,
for --seconds; each answer must equal its reference (the same question asked alone first). Chaos:
  --abort-storm             cancel a quarter of the answers as soon as they start
  --kill-stage NAME@S       SIGKILL stage NAME's process S seconds in (it restarts)
  --stop-stage NAME@S       SIGSTOP it instead (the hang watch replaces it)
  --fuzz                    malformed Realtime frames and HTTP bodies from test/fixtures/fuzz, one a second
Exit 0 when there is no mismatch and no process or shared memory outlived the run, 1 otherwise.

With --turns: each session is one Realtime conversation of N turns (a user message of --input-words words, then an
audio answer of at most --max-tokens text tokens; session.truncation "auto") against \`chorus serve\` started as a
child process, so the RSS read is the server's: main (its pid) and every stage process (GET /health stages[].pid),
from /proc after every turn. Prints failed turns, the TTFP of the turns whose answer dropped items
(conversation.item.deleted) against the 5 turns before each, and per process the RSS after turn 20, at the end and
their ratio (bench/SOAK.md).
  --thinker-positions P     run a copy of FILE whose Thinker has P positions (truncation within a short run)
  --rss-baseline-turn K     compare each process's last RSS with its RSS after turn K (20, issue 27's goal)
  --out FILE                also write the report (every turn, every RSS sample) as JSON to FILE
Exit 0 when no turn failed and no process or shared memory outlived the server, 1 otherwise.
`;

function chaos(flag: string, values: readonly string[] | undefined): ChaosAt[] {
  return (values ?? []).map((v) => {
    const m = /^([a-z0-9-]+)@(\d+(?:\.\d+)?)$/.exec(v);
    if (!m) throw new UsageError(`${flag} takes NAME@SECONDS (e.g. talker@15), got "${v}"`);
    return { stageId: m[1], atSeconds: Number(m[2]) };
  });
}

export async function run(argv: string[]): Promise<number> {
  // Stage processes inherit the environment: keep their start-up chatter out of the report unless asked for.
  process.env.CHORUS_LOG_LEVEL ??= 'warn';
  logger.level = process.env.CHORUS_LOG_LEVEL;
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      config: { type: 'string', default: defaultConfigPath() },
      seconds: { type: 'string' }, // 60; not with --turns
      sessions: { type: 'string' }, // 8, or 1 with --turns
      'max-tokens': { type: 'string', default: '12' },
      seed: { type: 'string', default: '0' },
      'abort-storm': { type: 'boolean', default: false },
      'kill-stage': { type: 'string', multiple: true },
      'stop-stage': { type: 'string', multiple: true },
      fuzz: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      turns: { type: 'string' },
      'thinker-positions': { type: 'string' },
      'input-words': { type: 'string' },
      'rss-baseline-turn': { type: 'string' },
      out: { type: 'string' },
    },
  });
  const turns = values.turns !== undefined;
  const base = {
    config: values.config!,
    sessions: intFlag('--sessions', values.sessions ?? (turns ? '1' : '8'), 1)!,
    maxTokens: intFlag('--max-tokens', values['max-tokens'], 1)!,
    seed: intFlag('--seed', values.seed)!,
  };
  if (turns) {
    for (const flag of ['seconds', 'abort-storm', 'kill-stage', 'stop-stage', 'fuzz'] as const) {
      const v = values[flag];
      if (v !== undefined && v !== false) throw new UsageError(`--${flag} is for the timed soak, not --turns`);
    }
    const options: TurnsSoakOptions = {
      ...base,
      turns: intFlag('--turns', values.turns, 1)!,
      thinkerPositions: intFlag('--thinker-positions', values['thinker-positions'], 64) ?? null,
      inputWords: intFlag('--input-words', values['input-words'] ?? '40', 1)!,
      rssBaselineTurn: intFlag('--rss-baseline-turn', values['rss-baseline-turn'] ?? String(RSS_BASELINE_TURN), 1)!,
    };
    return runTurns(options, values.json!, values.out);
  }
  for (const flag of ['thinker-positions', 'input-words', 'rss-baseline-turn', 'out'] as const)
    if (values[flag] !== undefined) throw new UsageError(`--${flag} goes with --turns`);
  const report = await runSoak(
    {
      ...base,
      seconds: intFlag('--seconds', values.seconds ?? '60', 1)!,
      abortStorm: values['abort-storm']!,
      killStage: chaos('--kill-stage', values['kill-stage']),
      stopStage: chaos('--stop-stage', values['stop-stage']),
      fuzz: values.fuzz!,
    },
    (line) => process.stderr.write(`chorus soak: ${line}\n`),
  );
  if (values.json) process.stdout.write(`${JSON.stringify(report)}\n`);
  else {
    const lines = [
      `answers ${report.answers}, mismatches ${report.mismatches.length}`,
      `endings other than completed: ${JSON.stringify(report.endings)}`,
      `TTFP p50 ${report.ttfpMs.p50?.toFixed(1)} ms, p99 ${report.ttfpMs.p99?.toFixed(1)} ms`,
      `migrations: ${report.migrations.migrated} migrated (mean pause ${report.migrations.pauseMsMean ?? '-'} ms), ` +
        `${report.migrations.refused} refused, ${report.migrations.failed} failed`,
      `fuzz: ${JSON.stringify(report.fuzz)}`,
      ...Object.entries(report.rssMiB).map(([k, v]) => `RSS ${k}: ${v.start} -> ${v.end} MiB (max ${v.max})`),
      `left over: processes ${JSON.stringify(report.leftover.processes)}, segments ${report.leftover.segments.length}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  return exitCode(report.mismatches.length === 0, report.leftover);
}

async function runTurns(options: TurnsSoakOptions, json: boolean, out: string | undefined): Promise<number> {
  const report = await runTurnsSoak(options, (line) => process.stderr.write(`chorus soak: ${line}\n`));
  if (out !== undefined) writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(json ? `${JSON.stringify(report)}\n` : formatTurnsSoak(report));
  return exitCode(report.failed.length === 0, report.leftover);
}

/** 0 when the soak's own check passed and no process or shared memory outlived the run. */
function exitCode(passed: boolean, leftover: { processes: readonly number[]; segments: readonly string[] }): number {
  return passed && leftover.processes.length === 0 && leftover.segments.length === 0 ? 0 : 1;
}
