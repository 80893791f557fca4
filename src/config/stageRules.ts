/**
 * Rules that tie a stage's settings to its kind and its place in the graph: which processor feeds which
 * consumer, which worker type a kind can run, and which stage may produce which final output.
 */
import type { Problems } from './problems.ts';
import type { FinalOutputType, ProcessorName, StageKind, WorkerType } from './types.ts';

const processorEdges: Readonly<Record<ProcessorName, { from: StageKind; to: StageKind }>> = {
  thinker2talker: { from: 'thinker', to: 'talker' },
  talker2code2wav: { from: 'talker', to: 'code2wav' },
  encoder2thinker: { from: 'encoder', to: 'thinker' },
};
const processorNames = Object.keys(processorEdges) as ProcessorName[];

export interface RuleStage {
  readonly index: number;
  readonly stageId: string;
  readonly kind: StageKind;
}

/**
 * The processor that turns this stage's output into its consumers' input. Left out in YAML, it is
 * inferred from the two kinds; given, it must fit them. `given` is undefined when the key is absent.
 */
export function resolveProcessor(
  stage: RuleStage,
  given: ProcessorName | null | undefined,
  consumers: readonly RuleStage[],
  problems: Problems,
): ProcessorName | null {
  const at = ['stages', stage.index, 'next_stage_processor'];
  if (consumers.length === 0) {
    if (given) problems.warn(at, `${given} is unused: no stage reads from "${stage.stageId}"`);
    return null;
  }
  let expected: ProcessorName | null = null;
  for (const consumer of consumers) {
    const fit = processorNames.find((p) => processorEdges[p].from === stage.kind && processorEdges[p].to === consumer.kind);
    if (!fit) {
      const known = processorNames.map((p) => `${processorEdges[p].from} -> ${processorEdges[p].to}`).join(', ');
      const inputIndexHint = ['stages', consumer.index, 'inputs'];
      problems.add(inputIndexHint, `${article(consumer.kind)} ${consumer.kind} cannot read from "${stage.stageId}" (${article(stage.kind)} ${stage.kind}): the edges that exist are ${known}`);
      return null;
    }
    expected = fit;
  }
  if (given === undefined) return expected;
  if (given !== expected) {
    const reader = consumers[0];
    problems.add(at, `${given === null ? 'null' : given} does not fit: ${stage.kind} "${stage.stageId}" feeds ${reader.kind} "${reader.stageId}"; use ${expected} (or leave the key out)`);
    return null;
  }
  return given;
}

/** Thinker and Talker decode token by token (ar); Code2Wav decodes a chunk, an encoder a batch of items, at once (generation). */
export function checkWorkerType(stage: RuleStage, workerType: WorkerType, problems: Problems): void {
  const required: Partial<Record<StageKind, WorkerType>> = { thinker: 'ar', talker: 'ar', code2wav: 'generation', encoder: 'generation' };
  const want = required[stage.kind];
  if (want && workerType !== want) {
    problems.add(['stages', stage.index, 'worker_type'], `a ${stage.kind} stage runs on the ${want} worker, got ${workerType} (leave the key out to use the default)`);
  }
}

/** Text comes from a thinker and audio from a code2wav; nothing else reaches the client. */
export function resolveFinalOutput(
  stage: RuleStage,
  finalOutput: boolean,
  type: FinalOutputType | null | undefined,
  problems: Problems,
): FinalOutputType | null {
  const at = ['stages', stage.index];
  if (!finalOutput) {
    if (type) problems.add([...at, 'final_output_type'], `is set but final_output is not true (add \`final_output: true\` or remove it)`);
    return null;
  }
  if (!type) {
    problems.add([...at, 'final_output'], 'final_output_type is required when final_output is true (text or audio)');
    return null;
  }
  const producer: Record<FinalOutputType, StageKind> = { text: 'thinker', audio: 'code2wav' };
  if (producer[type] !== stage.kind) {
    problems.add([...at, 'final_output_type'], `a ${stage.kind} cannot produce ${type} output (text comes from a thinker, audio from a code2wav)`);
    return null;
  }
  return type;
}

function article(word: string): string {
  return /^[aeiou]/.test(word) ? 'an' : 'a';
}
