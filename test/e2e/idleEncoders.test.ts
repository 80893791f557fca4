/**
 * The default pipeline (configs/tiny-omni.yaml) runs audio and image encoders next to the Thinker, Talker and
 * Code2Wav. An encoder with nothing to encode must cost no CPU: text answers leave its CPU time where it was. Every
 * stage process runs stage_nice (default 8) nice levels below the server, its model threads included; the image
 * encoder, with its engine.nice, that many more (below the Thinker).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfigPath, loadConfig } from '../../src/config/loadConfig.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { cpuTicksOf } from '../../src/common/processCpu.ts';
import { collect } from '../helpers/engine.ts';

let engine: Orchestrator;

beforeAll(async () => {
  engine = await Orchestrator.start(await loadConfig(defaultConfigPath()));
}, 120_000);

afterAll(async () => {
  await engine?.close();
});

describe('idle encoders in the default pipeline', () => {
  it('use no CPU while text answers run through the Thinker, Talker and Code2Wav', async () => {
    const pidOf = (instance: string) => engine.workerOf(instance)!.pid!;
    const pids = Object.fromEntries(
      ['audio-encoder#0', 'image-encoder#0', 'thinker#0'].map((i) => [i, pidOf(i)] as const),
    );
    const answer = async (i: number) => {
      const r = await collect(
        engine.generate({
          messages: [{ role: 'user', content: `Tell me about the sea, part ${i}` }],
          modalities: ['text', 'audio'],
          sampling: { maxTokens: 40, ignoreEos: true },
        }),
      );
      expect(r.done.finishReason).toBe('length');
    };
    await answer(-1); // warm-up: start-up work of every process is behind us
    const before = Object.fromEntries(Object.entries(pids).map(([i, pid]) => [i, cpuTicksOf(pid)!]));
    for (let i = 0; i < 4; i++) await answer(i);
    const used = Object.fromEntries(Object.entries(pids).map(([i, pid]) => [i, cpuTicksOf(pid)! - before[i]]));
    expect(used['thinker#0']).toBeGreaterThan(5); // the window was long enough to see work (ticks of 10 ms)
    // Stats reports every 250 ms cost next to nothing: a few ticks at most (timers, GC), however loaded the
    // machine is, against the Thinker's work.
    const idleBound = 3 + used['thinker#0'] / 10;
    expect(used['audio-encoder#0']).toBeLessThanOrEqual(idleBound);
    expect(used['image-encoder#0']).toBeLessThanOrEqual(idleBound);
  }, 60_000);

  it('stage processes run stage_nice levels below the server (+ engine.nice), onnxruntime threads too', () => {
    /** Nice value of a thread (field 19 of /proc/<pid>/task/<tid>/stat; the name in field 2 may hold spaces). */
    const niceOf = (pid: number, tid: number) =>
      Number(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ')[16]);
    const expected = Math.min(19, getPriority() + engine.graph.stageNice);
    expect(engine.graph.stageNice).toBe(8);
    // The image encoder's engine.nice (8 in the shipped config) puts it below the Thinker as well.
    const imageNice = engine.graph.stages.find((s) => s.stageId === 'image-encoder')!.engine.nice;
    expect(imageNice).toBe(8);
    const niceOfInstance: Record<string, number> = {
      'thinker#0': expected,
      'talker#0': expected,
      'code2wav#0': expected,
      'audio-encoder#0': expected,
      'image-encoder#0': Math.min(19, expected + imageNice!),
    };
    for (const [instance, nice] of Object.entries(niceOfInstance)) {
      const pid = engine.workerOf(instance)!.pid!;
      expect(niceOf(pid, pid), instance).toBe(nice);
      // Every thread: those that existed at boot were lowered, and the model's, created after, inherit it.
      for (const tid of readdirSync(`/proc/${pid}/task`).map(Number))
        expect(niceOf(pid, tid), `${instance}/${tid}`).toBe(nice);
    }
  });
});
