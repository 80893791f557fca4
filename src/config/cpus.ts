/**
 * `engine.cpus` of the stages: the cores each stage keeps to itself (src/common/affinity.ts pins them), checked
 * against this machine's cores and resolved (`auto`: a core of its own, while one stays for the rest).
 */
import type { Static } from '@sinclair/typebox';
import type { StageSpec } from '../common/graph.ts';
import type { Problems } from './problems.ts';
import type { GraphYaml } from './schema.ts';

type GraphYamlValue = Static<typeof GraphYaml>;

/**
 * `engine.cpus`: cores that exist here, and at least one left for main and the stages without `cpus` (a stage's
 * cores are its own: the rest of the deployment runs on the others). Returns the cores the stages list.
 */
export function checkCpus(yaml: GraphYamlValue, cores: number, problems: Problems): Set<number> {
  const reserved = new Set<number>();
  yaml.stages.forEach((s, index) => {
    for (const cpu of listedCpus(s.engine?.cpus)) {
      if (cpu >= cores)
        problems.add(
          ['stages', index, 'engine', 'cpus'],
          `core ${cpu} does not exist: this machine has ${cores} (0-${cores - 1})`,
        );
      reserved.add(cpu);
    }
  });
  if (reserved.size > 0 && reserved.size >= cores)
    problems.add(
      ['stages'],
      `the stages' cpus reserve all ${cores} cores: leave at least one for the server and the stages without cpus`,
    );
  problems.throwIfAny();
  return reserved;
}

const listedCpus = (cpus: readonly number[] | 'auto' | undefined): readonly number[] =>
  cpus === undefined || cpus === 'auto' ? [] : cpus;

/**
 * Each stage's cores by stage id, sorted: its own list, or for `cpus: auto` one core of its own, the highest that no
 * stage listed and no earlier `auto` took, as long as one core stays for the rest (so a config with `auto` loads on
 * any machine: on one core, or with every core taken, the stage runs with the rest, and a warning says so).
 */
export function assignCpus(
  yaml: GraphYamlValue,
  cores: number,
  listed: ReadonlySet<number>,
  problems: Problems,
): Map<string, number[]> {
  const taken = new Set(listed);
  const out = new Map<string, number[]>();
  yaml.stages.forEach((s, index) => {
    const cpus = s.engine?.cpus;
    if (cpus === undefined) return;
    if (cpus !== 'auto') {
      out.set(
        s.stage_id,
        [...cpus].sort((a, b) => a - b),
      );
      return;
    }
    const free = Array.from({ length: cores }, (_, cpu) => cores - 1 - cpu).filter((cpu) => !taken.has(cpu));
    if (free.length < 2) {
      problems.warn(
        ['stages', index, 'engine', 'cpus'],
        `auto: no core of its own is left on this machine's ${cores} (one must stay for the server and the ` +
          'stages without cpus); it runs with the rest',
      );
      return;
    }
    taken.add(free[0]);
    out.set(s.stage_id, [free[0]]);
  });
  return out;
}

export function withCpus(stage: StageSpec, cpus: number[] | undefined): StageSpec {
  return cpus ? { ...stage, engine: { ...stage.engine, cpus } } : stage;
}
