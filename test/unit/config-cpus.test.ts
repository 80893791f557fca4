/**
 * `engine.cpus` (src/common/affinity.ts): cores a stage keeps to itself. The config refuses cores the machine does
 * not have and a plan that leaves none for the rest; the other processes get the cores nobody reserved.
 */
import os from 'node:os';
import { configProblems } from '../helpers/configProblems.ts';
import { describe, expect, it } from 'vitest';
import { cpusFor, reservedCpus } from '../../src/common/affinity.ts';
import { parseConfig } from '../../src/config/loadConfig.ts';

const config = (talkerCpus: string, code2wavCpus = '') => `stages:
  - stage_id: thinker
    kind: thinker
    final_output: true
    final_output_type: text
  - stage_id: talker
    kind: talker
    inputs: [{from: thinker}]
    engine: {cpus: ${talkerCpus}}
  - stage_id: code2wav
    kind: code2wav
    inputs: [{from: talker}]
    final_output: true
    final_output_type: audio
${code2wavCpus ? `    engine: {cpus: ${code2wavCpus}}\n` : ''}`;

const problems = (yaml: string, cores: number) => configProblems(yaml, 'configs/x.yaml', cores);

describe('engine.cpus', () => {
  it('takes distinct cores of this machine, sorted, and gives the rest to everything else', () => {
    const graph = parseConfig(config('[3, 1]'), 'configs/x.yaml', { cores: 4 });
    const talker = graph.stages.find((s) => s.stageId === 'talker')!;
    expect(talker.engine.cpus).toEqual([1, 3]);
    expect(graph.stages.find((s) => s.stageId === 'thinker')!.engine.cpus).toBeUndefined();
    expect(reservedCpus(graph)).toEqual([1, 3]);
    expect(cpusFor(graph, talker)).toEqual([1, 3]);
    const others = Array.from({ length: os.availableParallelism() }, (_, c) => c).filter((c) => c !== 1 && c !== 3);
    expect(cpusFor(graph, null)).toEqual(others);
    expect(cpusFor(graph, graph.stages[0])).toEqual(others);
    // No stage reserving anything: the OS places every process.
    expect(cpusFor(parseConfig(config('[1]').replace('    engine: {cpus: [1]}\n', ''), 'x.yaml'), null)).toBeNull();
  });

  it('refuses cores the machine does not have, repeated cores, and a plan that reserves every core', () => {
    expect(problems(config('[2]'), 2)).toEqual([
      'configs/x.yaml:9 stages[1].engine.cpus: core 2 does not exist: this machine has 2 (0-1)',
    ]);
    expect(problems(config('[1, 1]'), 2)[0]).toMatch(/stages\[1\]\.engine\.cpus: must be a list of distinct core/);
    expect(problems(config('[]'), 2)[0]).toMatch(/stages\[1\]\.engine\.cpus: must be a list of distinct core/);
    expect(problems(config('[1]', '[0]'), 2)).toEqual([
      "configs/x.yaml:1 stages: the stages' cpus reserve all 2 cores: leave at least one for the server and the " +
        'stages without cpus',
    ]);
  });

  it('auto: a core of its own, the highest nobody listed, while one stays for the rest; else a warning', () => {
    const cpusOf = (yaml: string, cores: number) => {
      const graph = parseConfig(yaml, 'configs/x.yaml', { cores });
      const byId = Object.fromEntries(graph.stages.map((s) => [s.stageId, s.engine.cpus]));
      const warnings = (graph.warnings ?? []).filter((w) => w.includes('engine.cpus'));
      return { talker: byId.talker, code2wav: byId.code2wav, warnings };
    };
    expect(cpusOf(config('auto'), 2)).toEqual({ talker: [1], code2wav: undefined, warnings: [] });
    expect(cpusOf(config('auto'), 8).talker).toEqual([7]);
    // Listed cores are never taken by auto; autos take the highest free ones in the YAML's order.
    expect(cpusOf(config('auto', '[3]'), 4)).toMatchObject({ talker: [2], code2wav: [3], warnings: [] });
    expect(cpusOf(config('auto', 'auto'), 4)).toMatchObject({ talker: [3], code2wav: [2], warnings: [] });
    // No core of its own left: the config still loads, the stage runs with the rest, and a warning says why.
    const one = cpusOf(config('auto'), 1);
    expect(one.talker).toBeUndefined();
    expect(one.warnings).toEqual([
      "configs/x.yaml:9 stages[1].engine.cpus: auto: no core of its own is left on this machine's 1 (one must stay " +
        'for the server and the stages without cpus); it runs with the rest',
    ]);
    const full = cpusOf(config('auto', 'auto'), 2);
    expect([full.talker, full.code2wav]).toEqual([[1], undefined]);
    expect(full.warnings).toHaveLength(1);
    expect(problems(config('automatic'), 2)[0]).toMatch(/stages\[1\]\.engine\.cpus: .* or "auto"/);
  });

  describe('threads against cores', () => {
    const warnings = (yaml: string, cores: number) => parseConfig(yaml, 'configs/x.yaml', { cores }).warnings ?? [];

    it('says nothing for single-threaded stages that outnumber the cores (they take turns)', () => {
      expect(warnings(config('auto'), 2).filter((w) => w.includes('onnxruntime threads'))).toEqual([]);
    });

    it('warns when stages with threads to give back ask for more than the cores, naming them', () => {
      const yaml = config('auto').replace('engine: {cpus: auto}', 'engine: {threads: 2}');
      expect(warnings(yaml, 2).filter((w) => w.includes('onnxruntime threads'))).toEqual([
        expect.stringMatching(/ask for 4 onnxruntime threads .* on 2 cores: .*; lower threads of talker \(2\)$/),
      ]);
    });
  });
});
