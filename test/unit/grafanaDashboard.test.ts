/**
 * docs/grafana-dashboard.json stays built on metrics that exist: every chorus_* name its queries use (a histogram's
 * _bucket / _sum / _count series by the histogram's name) is registered in the server's registries
 * (src/server/metrics/metrics.ts, the process's; stageMetrics.ts, each server's own), so a renamed or dropped metric
 * fails here instead of as an empty panel.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { metricsRegistry } from '../../src/server/metrics/metrics.ts';
import { StageMetrics } from '../../src/server/metrics/stageMetrics.ts';

const DASHBOARD = join(import.meta.dirname, '..', '..', 'docs', 'grafana-dashboard.json');

interface Dashboard {
  readonly panels: readonly { readonly title: string; readonly targets: readonly { readonly expr: string }[] }[];
}

describe('docs/grafana-dashboard.json', () => {
  it('queries only metrics the server registers, and every panel queries one', () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
    const stages = new StageMetrics(() => undefined);
    stages.close();
    const all = [metricsRegistry, stages.registry].flatMap((r) => r.getMetricsAsArray());
    const registered = new Map(all.map((m) => [m.name, String(m.type)]));
    const used = new Set<string>();
    for (const panel of dashboard.panels) {
      expect(panel.targets.length, panel.title).toBeGreaterThan(0);
      for (const { expr } of panel.targets)
        for (const [name] of expr.matchAll(/\bchorus_[a-z0-9_]+/g)) {
          const base = name.replace(/_(bucket|sum|count)$/, '');
          // A histogram is queried through its series; anything else by its own name.
          const known = registered.get(name) ?? (registered.get(base) === 'histogram' ? 'histogram' : undefined);
          expect(known, `${panel.title}: ${name}`).toBeDefined();
          used.add(name);
        }
    }
    // The per-stage figures the dashboard exists for (issue 32).
    for (const name of [
      'chorus_stage_step_seconds_bucket',
      'chorus_stage_kv_cache_bytes',
      'chorus_ttfp_seconds_bucket',
    ])
      expect(used).toContain(name);
  });
});
