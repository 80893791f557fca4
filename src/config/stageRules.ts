/**
 * Rules that tie a stage to its kind and its place in the graph, asked of the kind's descriptor
 * (stages/<kind>/descriptor.ts): which kinds it can feed, and which final output it may produce.
 */
import type { FinalOutputType, StageKind } from '../common/graph.ts';
import { stageKindNames, stageKinds } from '../../stages/registry.ts';
import type { Problems } from './problems.ts';

export interface RuleStage {
  readonly index: number;
  readonly stageId: string;
  readonly kind: StageKind;
}

/** Whether a `from` stage may feed a `to` one: `from` feeds it, or `to` reads `from`'s text. */
function edgeExists(from: StageKind, to: StageKind): boolean {
  return stageKinds[from].feeds.includes(to) || (stageKinds[to].readsText?.from.includes(from) ?? false);
}

/** Every consumer must be of a kind this stage's kind feeds. */
export function checkFeeds(stage: RuleStage, consumers: readonly RuleStage[], problems: Problems): void {
  for (const consumer of consumers) {
    if (edgeExists(stage.kind, consumer.kind)) continue;
    const edges = stageKindNames.flatMap((from) =>
      stageKindNames.filter((to) => edgeExists(from, to)).map((to) => [from, to]),
    );
    const known = edges.map(([from, to]) => `${from} -> ${to}`).join(', ');
    problems.add(
      ['stages', consumer.index, 'inputs'],
      `${article(consumer.kind)} ${consumer.kind} cannot read from "${stage.stageId}" ` +
        `(${article(stage.kind)} ${stage.kind}): the edges that exist are ${known}`,
    );
  }
}

/** Settings that used to be YAML keys and are now decided by the stage kind: refused with what to do. */
export function refuseKindSettings(index: number, raw: Readonly<Record<string, unknown>>, problems: Problems): void {
  if (raw.worker_type !== undefined)
    problems.add(
      ['stages', index, 'worker_type'],
      'is decided by the stage kind (thinker, talker: ar; code2wav, encoder: generation): remove the key',
    );
  if (raw.next_stage_processor !== undefined)
    problems.add(
      ['stages', index, 'next_stage_processor'],
      'is decided by the two stage kinds of the edge (thinker -> talker, talker -> code2wav): remove the key',
    );
}

/** Each kind produces at most one final output (text comes from a thinker, audio from a code2wav). */
export function resolveFinalOutput(
  stage: RuleStage,
  finalOutput: boolean,
  type: FinalOutputType | null | undefined,
  problems: Problems,
): FinalOutputType | null {
  const at = ['stages', stage.index];
  if (!finalOutput) {
    if (type)
      problems.add(
        [...at, 'final_output_type'],
        `is set but final_output is not true (add \`final_output: true\` or remove it)`,
      );
    return null;
  }
  if (!type) {
    problems.add([...at, 'final_output'], 'final_output_type is required when final_output is true (text or audio)');
    return null;
  }
  if (stageKinds[stage.kind].finalOutput !== type) {
    const producers = stageKindNames
      .filter((k) => stageKinds[k].finalOutput !== null)
      .map((k) => `${stageKinds[k].finalOutput} from ${article(k)} ${k}`)
      .join(', ');
    problems.add(
      [...at, 'final_output_type'],
      `${article(stage.kind)} ${stage.kind} cannot produce ${type} output (${producers})`,
    );
    return null;
  }
  return type;
}

function article(word: string): string {
  return /^[aeiou]/.test(word) ? 'an' : 'a';
}
