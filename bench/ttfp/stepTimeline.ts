/**
 * `node --import tsx bench/ttfp/stepTimeline.ts --steps DIR --requests RUN/requests.json [--concurrency 10]
 * [--variant async] [--index 0]` — where a request's first audio packet waited, stage by stage, from a bench run
 * made with `chorus bench --trace-steps DIR` (bench/ttfp/report/stepBreakdown.ts). --index picks the request by
 * send order within the run (0 = the first of the burst); --index all prints the mean shares over the run.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { firstPacketBreakdown, formatBreakdown, type StageShare } from './report/stepBreakdown.ts';
import { readStepTraces } from './report/stepTraces.ts';

const { values } = parseArgs({
  options: {
    steps: { type: 'string' },
    requests: { type: 'string' },
    concurrency: { type: 'string', default: '1' },
    variant: { type: 'string', default: 'async' },
    index: { type: 'string', default: '0' },
    last: { type: 'string', default: 'code2wav' },
  },
});
if (!values.steps || !values.requests) throw new Error('give --steps DIR and --requests FILE');

interface RequestRow {
  readonly variant: string;
  readonly concurrency: number;
  readonly sent_at_ms: number;
  readonly request_id: string;
  readonly ok: boolean;
  readonly engine_ttfp_ms: number | null;
}

const stages = await readStepTraces(values.steps);
const rows = (JSON.parse(readFileSync(values.requests, 'utf8')) as RequestRow[])
  .filter((r) => r.variant === values.variant && r.concurrency === Number(values.concurrency) && r.ok)
  .filter((r) => r.engine_ttfp_ms !== null)
  .sort((a, b) => a.sent_at_ms - b.sent_at_ms);
if (rows.length === 0) throw new Error(`no ${values.variant} requests at c=${values.concurrency} with a TTFP`);

if (values.index === 'all') {
  const all = rows.map((r) => firstPacketBreakdown(stages, r.request_id, values.last, r.engine_ttfp_ms!));
  const mean = (stage: string, f: (s: StageShare) => number) =>
    (all.reduce((sum, b) => sum + f(b.stages.find((s) => s.stage === stage)!), 0) / all.length).toFixed(1);
  process.stdout.write(`${all.length} requests, mean ms over each one's first-packet window:\n`);
  for (const { stage } of stages) {
    const [own, other, idle] = [
      mean(stage, (s) => s.ownMs),
      mean(stage, (s) => s.otherMs),
      mean(stage, (s) => s.idleMs),
    ];
    process.stdout.write(
      `  ${stage.padEnd(11)} own ${own.padStart(7)}   others' ${other.padStart(7)}   idle ${idle}\n`,
    );
  }
} else {
  const row = rows[Number(values.index)];
  if (!row) throw new Error(`--index ${values.index}: the run has ${rows.length} requests`);
  process.stdout.write(
    `${formatBreakdown(firstPacketBreakdown(stages, row.request_id, values.last, row.engine_ttfp_ms!))}\n`,
  );
}
