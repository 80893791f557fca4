/**
 * The echo kind: an entry stage with no model that writes the prompt back as text. Registered at test time
 * (registerStageKind); the descriptor is all the rest of Chorus learns of it.
 */
import { Type } from '@sinclair/typebox';
import type { StageKind } from '../../../../src/common/graph.ts';
import type { ModelFacts } from '../../../../src/common/modelFacts.ts';
import type { StageKindDescriptor } from '../../../../stages/StageKindDescriptor.ts';
import { EchoCore } from './EchoCore.ts';
import type { EchoArgs } from './protocol.ts';

/** The READY facts of a model-less stage: it reports the tokenizer's vocabulary it echoes, like a Thinker. */
const facts: ModelFacts = { kind: 'echo' };

export const ECHO_INTERVAL_MS = 20;
/** The prompt positions it says its entry model has (promptLimits): main refuses longer prompts. */
export const ECHO_MAX_POSITIONS = 200;

export const echo: StageKindDescriptor<EchoArgs> = {
  kind: 'echo' as StageKind, // not in the registry's list: registered by the tests that use it
  workerType: 'generation',
  defaultMaxTokens: 4,
  feeds: [],
  finalOutput: 'text',
  entry: true,
  readsRequest: false,
  requestSampling: 'sampling',
  sizedFrom: 'inputs',
  modelSchema: () => Type.Object({}),
  resolveGeneratedModel: () => null,
  addArgs: (ctx) => ({ tokenIds: ctx.promptTokenIds, intervalMs: ECHO_INTERVAL_MS }),
  createStage: (ctx) => Promise.resolve({ core: new EchoCore(ctx), facts, modelFiles: [], close: async () => {} }),
  probe: () => Promise.resolve(facts),
  promptLimits: () => ({ maxPositions: ECHO_MAX_POSITIONS }),
};
