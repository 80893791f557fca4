/**
 * `node --import tsx bench/models/coRun.ts [--preset tiny] [--batch 10] [--steps 100] [--seconds 3] [--rounds 2]` —
 * how much two stages slow each other when they compute at the same time on this machine, as they do when served:
 * the Thinker's and the Talker's decode steps at `--batch`, each in a process of its own (one onnxruntime thread,
 * as the stages run), first each alone, then both at once, `--rounds` times alternated. Each process runs rounds of
 * `--steps` steps (after a prefill of 100 positions per sequence) for `--seconds`, started together once both have
 * loaded. Prints ms per step alone and together and the ratio: what the throughput limit, which charges each
 * stage its time alone, leaves out (bench/README.md).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createTalkerRunner, createThinkerRunner } from '../../stages/runners.ts';
import { loaderFlagsFor } from '../../src/common/moduleFile.ts';
import { cachedModelsDir, presetSpecs, stats, talkerSteps, thinkerSteps } from './runModelBench.ts';

type Stage = 'thinker' | 'talker';

const { values } = parseArgs({
  options: {
    preset: { type: 'string', default: 'tiny' },
    batch: { type: 'string', default: '10' },
    steps: { type: 'string', default: '100' },
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '2' },
    child: { type: 'string' },
  },
});

/** A child: load one stage's runner, say ready, run steps from 'go' for the time given, send the step times. */
async function child(stage: Stage): Promise<void> {
  const specs = presetSpecs(values.preset);
  const [engine, batch, steps] = [{ threads: 1 }, Number(values.batch), Number(values.steps)];
  let run: (tag: string) => number[];
  if (stage === 'thinker') {
    const runner = await createThinkerRunner({ model: specs.thinker, engine }, cachedModelsDir());
    run = (tag) => thinkerSteps(runner, batch, steps, tag);
  } else {
    const runner = await createTalkerRunner({ model: specs.talker, engine }, cachedModelsDir());
    run = (tag) => talkerSteps(runner, batch, steps, tag);
  }
  run('warm'); // arenas and the JIT, before anything is measured
  process.send!({ ready: true });
  process.once('message', () => {
    const until = performance.now() + 1000 * Number(values.seconds);
    const times: number[] = [];
    for (let r = 0; performance.now() < until; r++) times.push(...run(`r${r}-`));
    process.send!({ times }, () => process.exit(0));
  });
}

/** Runs the stages given at once (each in its own process, started together); returns each one's mean ms/step. */
async function measure(stages: readonly Stage[]): Promise<Map<Stage, number>> {
  const self = fileURLToPath(import.meta.url);
  const children = stages.map((stage) => ({
    stage,
    proc: fork(self, ['--child', stage, ...process.argv.slice(2)], { execArgv: loaderFlagsFor(self) }),
  }));
  const message = (proc: ChildProcess) =>
    new Promise<{ ready?: boolean; times?: number[] }>((resolve, reject) => {
      proc.once('message', resolve);
      proc.once('exit', (code) => reject(new Error(`child exited with ${code} before answering`)));
    });
  try {
    await Promise.all(children.map((c) => message(c.proc)));
    const results = children.map((c) => message(c.proc));
    for (const c of children) c.proc.send('go');
    const answers = await Promise.all(results);
    return new Map(children.map((c, i) => [c.stage, stats(answers[i].times ?? []).mean]));
  } finally {
    for (const c of children) c.proc.kill();
  }
}

if (values.child === 'thinker' || values.child === 'talker') {
  await child(values.child);
} else {
  const alone: Record<Stage, number[]> = { thinker: [], talker: [] };
  const together: Record<Stage, number[]> = { thinker: [], talker: [] };
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const stage of ['thinker', 'talker'] as const) alone[stage].push((await measure([stage])).get(stage)!);
    const both = await measure(['thinker', 'talker']);
    for (const stage of ['thinker', 'talker'] as const) together[stage].push(both.get(stage)!);
  }
  const list = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(' / ');
  process.stdout.write(`${values.preset}, batch ${values.batch}, ${values.rounds} rounds alternated (ms per step):\n`);
  for (const stage of ['thinker', 'talker'] as const) {
    const ratio = together[stage].map((t, i) => (t / alone[stage][i]).toFixed(2)).join(' / ');
    process.stdout.write(
      `  ${stage.padEnd(8)} alone ${list(alone[stage])}, beside the other ${list(together[stage])}: x${ratio}\n`,
    );
  }
}
