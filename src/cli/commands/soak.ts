/**
 * `chorus soak`: sessions against a pipeline for a while, every answer checked, with chaos on demand
 * (bench/soak/runSoak.ts). Exit 0 when no answer differs from its reference and nothing outlived the run.
 */
import { parseArgs } from 'node:util';
import { defaultConfigPath } from '../../config/loadConfig.ts';
import { runSoak, type ChaosAt } from '../../../bench/soak/runSoak.ts';
import { intFlag, UsageError } from '../cliArgs.ts';
import { logger } from '../../common/log.ts';

export const usage = `usage: chorus soak [--config FILE] [--seconds 60] [--sessions 8] [--max-tokens 12] [--seed 0]
                  [--abort-storm] [--kill-stage NAME@SECONDS]... [--stop-stage NAME@SECONDS]... [--fuzz] [--json]

Runs Realtime sessions against the pipeline of FILE (default configs/tiny-omni.yaml), started in this process,
for --seconds; each answer must equal its reference (the same question asked alone first). Chaos:
  --abort-storm             cancel a quarter of the answers as soon as they start
  --kill-stage NAME@S       SIGKILL stage NAME's process S seconds in (it restarts)
  --stop-stage NAME@S       SIGSTOP it instead (the hang watch replaces it)
  --fuzz                    malformed Realtime frames and HTTP bodies from test/fixtures/fuzz, one a second
Exit 0 when there is no mismatch and no process or shared memory outlived the run, 1 otherwise.
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
      seconds: { type: 'string', default: '60' },
      sessions: { type: 'string', default: '8' },
      'max-tokens': { type: 'string', default: '12' },
      seed: { type: 'string', default: '0' },
      'abort-storm': { type: 'boolean', default: false },
      'kill-stage': { type: 'string', multiple: true },
      'stop-stage': { type: 'string', multiple: true },
      fuzz: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  });
  const report = await runSoak(
    {
      config: values.config!,
      seconds: intFlag('--seconds', values.seconds, 1)!,
      sessions: intFlag('--sessions', values.sessions, 1)!,
      maxTokens: intFlag('--max-tokens', values['max-tokens'], 1)!,
      seed: intFlag('--seed', values.seed)!,
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
      `fuzz: ${JSON.stringify(report.fuzz)}`,
      ...Object.entries(report.rssMiB).map(([k, v]) => `RSS ${k}: ${v.start} -> ${v.end} MiB (max ${v.max})`),
      `left over: processes ${JSON.stringify(report.leftover.processes)}, segments ${report.leftover.segments.length}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  const clean = report.mismatches.length === 0 && report.leftover.processes.length === 0;
  return clean && report.leftover.segments.length === 0 ? 0 : 1;
}
