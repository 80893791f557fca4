/**
 * The metrics helpers every metrics module uses: declareMetrics (a table of rows -> prom-client metrics in the registry
 * given) and StageSeries (a stage instance's reported totals as counter increments, the gauges of what it holds
 * zeroed at its death). A private registry each, so nothing here touches the server's.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { declareMetrics } from '../../src/server/metrics/declareMetrics.ts';
import { StageSeries } from '../../src/server/metrics/StageSeries.ts';

function table(registry: Registry) {
  return declareMetrics(registry, {
    hits: { counter: 'test_hits_total', help: 'Hits.', labels: ['stage'] },
    bytes: { gauge: 'test_bytes', help: 'Bytes held.', labels: ['stage'] },
    budget: { gauge: 'test_budget_bytes', help: 'Budget.', labels: ['stage'] },
    wait: { histogram: 'test_wait_seconds', help: 'Waits.', buckets: [0.1, 1] },
  });
}

async function valueOf(registry: Registry, name: string, stage: string): Promise<number | undefined> {
  const metric = registry.getSingleMetric(name);
  const { values } = await metric!.get();
  return values.find((v) => v.labels.stage === stage)?.value;
}

describe('declareMetrics', () => {
  it('declares each row as its kind, with its name, help, labels and buckets, in the registry given', async () => {
    const registry = new Registry();
    const m = table(registry);
    m.hits.inc({ stage: 'a' }, 2);
    m.wait.observe(0.5);
    const text = await registry.metrics();
    expect(text).toContain(
      '# HELP test_hits_total Hits.\n# TYPE test_hits_total counter\ntest_hits_total{stage="a"} 2',
    );
    expect(text).toContain('# TYPE test_bytes gauge');
    expect(text).toContain('test_wait_seconds_bucket{le="0.1"} 0\ntest_wait_seconds_bucket{le="1"} 1');
    // A second table with the same names in the same registry is refused, as prom-client refuses any duplicate.
    expect(() => table(registry)).toThrow(/already been registered/);
  });
});

describe('StageSeries', () => {
  it('counts the increments of reported totals, from zero again after the instance died', async () => {
    const registry = new Registry();
    const m = table(registry);
    const series = new StageSeries();
    series.count('s#0', [['hits', 5, m.hits]]);
    series.count('s#0', [['hits', 8, m.hits]]);
    series.count('s#0', [['hits', Number.NaN, m.hits]]); // no sample
    expect(await valueOf(registry, 'test_hits_total', 's#0')).toBe(8);
    series.died('s#0');
    series.count('s#0', [['hits', 2, m.hits]]); // the new process counted 2 since it started
    expect(await valueOf(registry, 'test_hits_total', 's#0')).toBe(10);
  });

  it("zeroes at an instance's death the gauges it holds, and only its own", async () => {
    const registry = new Registry();
    const m = table(registry);
    const series = new StageSeries();
    series.hold('s#0', m.bytes, 100);
    series.hold('s#1', m.bytes, 200);
    m.budget.set({ stage: 's#0' }, 1000); // a setting, not held: death leaves it
    series.died('s#0');
    expect(await valueOf(registry, 'test_bytes', 's#0')).toBe(0);
    expect(await valueOf(registry, 'test_bytes', 's#1')).toBe(200);
    expect(await valueOf(registry, 'test_budget_bytes', 's#0')).toBe(1000);
  });
});
