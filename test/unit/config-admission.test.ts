/**
 * `admission:` of a graph (max_queue_ms, slo_ttfp_ms): in ms; `measured`, the measured bound (max_queue_ms's when
 * absent; slo_ttfp_ms is opt-in); null, no bound; running_limit adaptive (absent) or fixed; malformed is named.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/loadConfig.ts';
import { configProblems } from '../helpers/configProblems.ts';

const thinker = `stages:
  - stage_id: thinker
    kind: thinker
    final_output: true
    final_output_type: text
`;

describe('admission:', () => {
  it('is the measured queue bound when absent, the first-audio bound on request, none when null', () => {
    expect(parseConfig(thinker, 'configs/x.yaml').admission).toEqual({
      maxQueueMs: 'measured',
      sloTtfpMs: null,
      runningLimit: 'adaptive',
    });
    expect(parseConfig(`admission: {slo_ttfp_ms: measured}\n${thinker}`, 'configs/x.yaml').admission).toEqual({
      maxQueueMs: 'measured',
      sloTtfpMs: 'measured',
      runningLimit: 'adaptive',
    });
    expect(parseConfig(`admission: {max_queue_ms: null}\n${thinker}`, 'configs/x.yaml').admission).toEqual({
      maxQueueMs: null,
      sloTtfpMs: null,
      runningLimit: 'adaptive',
    });
    expect(parseConfig(`admission: {slo_ttfp_ms: null}\n${thinker}`, 'configs/x.yaml').admission).toEqual({
      maxQueueMs: 'measured',
      sloTtfpMs: null,
      runningLimit: 'adaptive',
    });
    expect(parseConfig(`admission: {max_queue_ms: 300}\n${thinker}`, 'configs/x.yaml').admission).toEqual({
      maxQueueMs: 300,
      sloTtfpMs: null,
      runningLimit: 'adaptive',
    });
    expect(parseConfig(`admission: {slo_ttfp_ms: 1500}\n${thinker}`, 'configs/x.yaml').admission).toEqual({
      maxQueueMs: 'measured',
      sloTtfpMs: 1500,
      runningLimit: 'adaptive',
    });
    const both = `admission:\n  max_queue_ms: 200\n  slo_ttfp_ms: 800\n${thinker}`;
    expect(parseConfig(both, 'configs/x.yaml').admission).toEqual({
      maxQueueMs: 200,
      sloTtfpMs: 800,
      runningLimit: 'adaptive',
    });
    expect(parseConfig(`admission: {running_limit: fixed}\n${thinker}`, 'configs/x.yaml').admission).toEqual({
      maxQueueMs: 'measured',
      sloTtfpMs: null,
      runningLimit: 'fixed',
    });
  });

  it('names the path of a misspelt or malformed bound', () => {
    expect(configProblems(`admission:\n  slo_ttft_ms: 800\n${thinker}`)).toEqual([
      'configs/x.yaml:2 admission.slo_ttft_ms: unknown key "slo_ttft_ms" (did you mean "slo_ttfp_ms"?)',
    ]);
    const [problem] = configProblems(`admission:\n  max_queue_ms: 0\n${thinker}`);
    expect(problem).toMatch(
      /^configs\/x\.yaml:2 admission\.max_queue_ms: must be an integer >= 1 \(ms\), measured \(derived .*\), or null/,
    );
    expect(configProblems(`admission:\n  slo_ttfp_ms: soon\n${thinker}`)[0]).toMatch(
      /^configs\/x\.yaml:2 admission\.slo_ttfp_ms: must be an integer >= 1 \(ms\), measured \(derived .*\), or null/,
    );
    expect(configProblems(`admission:\n  running_limit: learned\n${thinker}`)[0]).toMatch(
      /^configs\/x\.yaml:2 admission\.running_limit: must be adaptive \(learned from first packets\) or fixed/,
    );
    expect(configProblems(`admission: 500\n${thinker}`)).toHaveLength(1);
    expect(configProblems(`admission: 500\n${thinker}`)[0]).toMatch(/^configs\/x\.yaml:1 admission: /);
  });
});
