/** The edge table: one exact edge per replica pair, plus "stage#*" edges for stages that instances may join. */
import { describe, expect, it } from 'vitest';
import { planEdges } from '../../src/engine/planEdges.ts';
import { edgeTouches } from '../../transport/edges.ts';
import { configWith } from '../helpers/engine.ts';

const edgesOf = (config: string) => planEdges(configWith(config)).map((e) => `${e.from} -> ${e.to} (${e.connector})`);

describe('planEdges', () => {
  it('all-shm: exact edges only, one per replica pair and one per final output', () => {
    expect(edgesOf('tiny-omni-text-in.yaml')).toEqual([
      'thinker#0 -> main (shm)',
      'thinker#0 -> talker#0 (shm)',
      'talker#0 -> code2wav#0 (shm)',
      'code2wav#0 -> main (shm)',
    ]);
  });

  it('two-host: remote stages are reached through stage#* edges on redis; the Thinker text stays on shm', () => {
    expect(edgesOf('two-host.yaml')).toEqual([
      'thinker#0 -> main (shm)',
      'thinker#* -> talker#* (redis)',
      'talker#* -> code2wav#* (redis)',
      'code2wav#* -> main (redis)',
    ]);
    const edges = planEdges(configWith('two-host.yaml'));
    // An instance that joins later ("talker#hostb-7") finds its edges without any being provisioned for it.
    expect(edges.filter((e) => edgeTouches(e, 'talker#hostb-7')).map((e) => `${e.from}->${e.to}`)).toEqual([
      'thinker#*->talker#*',
      'talker#*->code2wav#*',
    ]);
    expect(edges.filter((e) => edgeTouches(e, 'thinker#0')).length).toBe(2);
    expect(edges.filter((e) => edgeTouches(e, 'talkers#1'))).toEqual([]);
  });
});
