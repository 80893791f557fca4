/**
 * Where each stage runs. `placement: local` (default): `chorus serve` spawns `replicas` processes. `placement:
 * remote`: it spawns none; instances started with `chorus stage` on other machines join over Redis, and /health waits
 * for `min_replicas` (default 1) of them. Instances can only reach a stage on another machine through a connector
 * that crosses hosts, so a remote stage must have every edge on a redis connector; a local stage whose edges all are
 * takes joining instances too (joinable), and /health waits for its `min_replicas` (default 0) joined beside its own.
 */
import type { ConnectorSpec, StageSpec } from '../common/graph.ts';
import { edgesTouching } from '../common/edgeConnectors.ts';
import type { Problems } from './problems.ts';
import { crossesHosts } from '../../transport/registry.ts';

export interface PlacementYaml {
  readonly placement?: 'local' | 'remote';
  readonly min_replicas?: number;
  readonly replicas?: number;
}

/** The stage with placement, min_replicas and joinable resolved; problems name the edges that cannot cross hosts. */
export function resolvePlacement(
  stages: readonly Omit<StageSpec, 'placement' | 'minReplicas' | 'joinable'>[],
  raw: ReadonlyMap<string, { index: number; yaml: PlacementYaml }>,
  connectors: Readonly<Record<string, ConnectorSpec>>,
  problems: Problems,
): StageSpec[] {
  const draft = stages.map((s) => ({ ...s, placement: 'local' as const, minReplicas: 0, joinable: false }));
  const graph = { stages: draft, connectors };
  return draft.map((stage) => {
    const { index, yaml } = raw.get(stage.stageId)!;
    const at = ['stages', index];
    const placement = yaml.placement ?? 'local';
    const local = edgesTouching(graph, stage).filter((e) => !crossesHosts(connectors[e.connector]?.kind));
    const joinable = local.length === 0;
    if (placement === 'remote' && !joinable)
      problems.add(
        [...at, 'placement'],
        `stage ${stage.stageId} is placement: remote, so every edge touching it must use a redis connector; ` +
          local.map((e) => `${e.what} uses ${e.connector} (${connectors[e.connector]?.kind})`).join(', ') +
          ': point those inputs at a connector of kind redis',
      );
    if (yaml.min_replicas !== undefined && placement !== 'remote' && !joinable)
      problems.add(
        [...at, 'min_replicas'],
        `min_replicas counts instances that join over Redis, and stage ${stage.stageId} takes none: ` +
          local.map((e) => `${e.what} uses ${e.connector}`).join(', ') +
          ' (put every edge of the stage on a redis connector, or leave min_replicas out)',
      );
    if (yaml.replicas !== undefined && placement === 'remote')
      problems.add(
        [...at, 'replicas'],
        'a remote stage has no local replicas: start instances with `chorus stage` and set min_replicas',
      );
    return {
      ...stage,
      placement,
      replicas: placement === 'remote' ? 0 : stage.replicas,
      minReplicas: yaml.min_replicas ?? (placement === 'remote' ? 1 : 0),
      joinable,
    };
  });
}
