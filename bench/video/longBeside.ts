/**
 * What one long sequence costs the short ones decoding beside it in the Thinker (issue 44's burst: a clip's 850
 * positions beside 31 texts of ~40). The runner pads a run's past to its longest, so the runner's grouping
 * (stages/models/groupByNumTokens.ts) runs a long sequence's decode apart from short ones'. Per round, in one process
 * on one thread like the stage, CPU ms of `--steps` decode steps of: 15 short sequences alone (A), the long one alone
 * (B), and all 16 in the same steps (C, one execute per step, as ThinkerCore runs a step). C / (A + B) is ~1 when the
 * long one runs apart; it was 4.1 (57.5 ms against 8.8 + 5.1, load 20) when it padded the short ones to its length.
 *
 *   npx tsx bench/video/longBeside.ts [--rounds 12] [--steps 3] [--long 850] [--short 40]
 */
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createThinkerRunner, presets, type ThinkerBatchItem } from '../../src/index.ts';
import { GREEDY_SAMPLING } from '../../src/basics.ts';
import { gitSha, median } from '../common.ts';
import { scriptFlags } from '../scriptFlags.ts';

const { rounds, steps, long, short } = scriptFlags({ rounds: 12, steps: 3, long: 850, short: 40 });
const size = (presets as Record<string, { thinker: unknown }>).tiny.thinker;
const spec = { model: { source: 'generated', kind: 'thinker', preset: 'tiny', seed: 0, size }, engine: { threads: 1 } };
const runner = await createThinkerRunner(spec as never, join(tmpdir(), 'chorus-bench-models'));

const item = (seqId: string, numTokens: number): ThinkerBatchItem => ({
  seqId,
  tokenIds: Array.from({ length: numTokens }, (_, i) => 10 + (i % 50)),
  numTokens,
  sample: true,
  sampling: GREEDY_SAMPLING,
});
let seq = 0;
/** CPU ms of `steps` decode steps of fresh sequences prefilled to these lengths (prefills untimed). */
function decodeCpuMs(lengths: readonly number[]): number {
  const ids = lengths.map((n) => {
    const id = `s${seq++}`;
    runner.execute([item(id, n)]);
    return id;
  });
  const before = process.cpuUsage();
  for (let s = 0; s < steps; s++) runner.execute(ids.map((id) => item(id, 1)));
  const used = process.cpuUsage(before);
  for (const id of ids) runner.free(id);
  return (used.user + used.system) / 1000;
}

const shorts = Array.from({ length: 15 }, () => short);
const arms = { A: () => decodeCpuMs(shorts), B: () => decodeCpuMs([long]), C: () => decodeCpuMs([...shorts, long]) };
const ms: Record<keyof typeof arms, number[]> = { A: [], B: [], C: [] };
decodeCpuMs([...shorts, long]); // warm-up
for (let r = 0; r < rounds; r++) for (const arm of ['A', 'B', 'C', 'C', 'B', 'A'] as const) ms[arm].push(arms[arm]());
const [a, b, c] = [median(ms.A), median(ms.B), median(ms.C)];
console.log(
  JSON.stringify({
    gitSha: gitSha(),
    load: Number(loadavg()[0].toFixed(1)),
    decodeStepsCpuMs: { shortAlone: a.toFixed(1), longAlone: b.toFixed(1), together: c.toFixed(1) },
    togetherOverApart: Number((c / (a + b)).toFixed(2)),
  }),
);
await runner.close();
