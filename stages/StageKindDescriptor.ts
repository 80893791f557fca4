/**
 * One descriptor per stage kind: everything the rest of Chorus needs to know about a kind, in one object. The
 * config loader asks it for the kind's rules (which kinds it can feed, which final output it makes, how its
 * generated model is sized), the stage process asks it to load the model and build the core, and what the model
 * turned out to be travels back to main in READY (ModelFacts). Nothing else switches on a stage kind.
 *
 * A new kind = a folder stages/<kind>/ with its descriptor, its protocol (add arguments, stats section, messages),
 * core, runner and model loading, its YAML section if it has one (`settings`), and one line in stages/registry.ts (the
 * full checklist: docs/architecture.md "What a new stage kind costs"). What main needs of a kind is a property here
 * (promptLimits, audioFacts, ecIdentity, prefixHeld, hearsFirstAudio), never a test of its name; so is what its
 * producer must send it (readsText), and its READY facts are its own schema in its protocol.ts, read through factsIn.
 */
import type { Static, TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import type { FinalOutputType, StageGraph, StageKind, StageSpec, WorkerType } from '../src/common/graph.ts';
import type { MediaModality } from '../src/common/encoderSettings.ts';
import type { ModelSpec } from '../src/common/modelSpec.ts';
import type { GenerateRequest } from '../src/common/engine.ts';
import type { AudioOutputFacts, ModelFacts } from '../src/common/modelFacts.ts';
import type { ConfigPath, ProblemSink } from '../src/common/problems.ts';
import type { StageContext, StageCore } from '../src/worker/StageCore.ts';
import type { BuiltStage } from '../src/worker/stageMain.ts';
import type { EcDrop, EncodeItem, PlaybackPlan, StageStats, ThinkerMediaPlan } from '../src/worker/messages.ts';
import type { HeldBlocks } from '../src/sched/PrefixCache.ts';
import type { TextBody } from '../src/common/payloads.ts';

export type { BuiltStage };

/** Another stage the rule looks at (an input or a consumer), with its model as resolved so far. */
export interface RelatedStage {
  readonly index: number;
  readonly stageId: string;
  readonly kind: StageKind;
  readonly model: ModelSpec | null;
}

/** Where a stage stands when its model is resolved: its neighbours' models (as far as resolution order allows). */
export interface StageNeighbours {
  readonly inputs: readonly RelatedStage[];
  readonly consumers: readonly RelatedStage[];
  /** Encoder stages: what they encode. */
  readonly modality?: MediaModality;
}

export interface GeneratedModelContext extends StageNeighbours {
  /** Where the model section is (`stages[i].model`), for problems. */
  readonly at: ConfigPath;
  readonly stageId: string;
  /** The model section, already valid against modelSchema(). */
  readonly raw: Readonly<Record<string, unknown>>;
  /** The model section's preset or, absent, the graph's model_preset (and the same for the seed). */
  readonly preset: string;
  readonly seed: number;
  /** True when `preset` came from model_preset, not from the section (problems point at the graph key). */
  readonly presetFromGraph: boolean;
}

/**
 * What main decided when it admitted a request, as every kind sees it: the descriptor's addArgs picks what its
 * kind reads. Kind-neutral: main fills it the same way for every stage of the request (src/engine/stageAdds.ts).
 */
export interface AddArgsContext {
  readonly requestId: string;
  readonly request: GenerateRequest;
  readonly spec: StageSpec;
  /** The instance the add goes to. */
  readonly instance: string;
  /** The request's prompt as token ids (media placeholders expanded). */
  readonly promptTokenIds: readonly number[];
  /** With media: the prompt's position map and items, and the items each encoder instance encodes. */
  readonly media: {
    readonly thinker: ThinkerMediaPlan;
    readonly encode: ReadonlyMap<string, readonly EncodeItem[]>;
  } | null;
  /** EC-store copies the entry stage must forget. */
  readonly ecDrop: readonly EcDrop[];
  /** The first-packet hold (chunkPolicy.ts firstPacketHoldTokens), undefined for none. */
  readonly firstPacketTokens?: number;
  /** Requests with audio out: the playback plan (src/engine/playbackPlan.ts). */
  readonly playback?: PlaybackPlan;
  /** READY facts of the request's chosen instances (those known): a Talker reads whether its vocoder keeps state. */
  readonly chosenFacts: readonly ModelFacts[];
}

/** A: the kind's add arguments (AddRequest.args), declared in its protocol.ts. */
/**
 * A kind's own section of a stage's YAML (`tts:` of a tts stage): config reads it into StageSpec.settings, refuses
 * it on stages of other kinds, and `npm run schema` writes it into configs/schema.json.
 */
export interface KindSettings<S = unknown> {
  /** The stage's YAML key. */
  readonly key: string;
  /** Its schema (closed: a misspelt setting is an error). */
  readonly yaml: TSchema;
  /** Its value with defaults, from a section valid against `yaml` (undefined: absent). */
  resolve(raw: never): S;
}

/**
 * How a producer's sampled tokens reach a kind that reads text (TextBody chunks): pushed as they are sampled, taken
 * as the chunks the consumer gets. The consumer's descriptor makes it (readsText), so the producer names no consumer.
 */
export interface TextFeed {
  push(tokenId: number): void;
  /** The chunk to send now: with `final`, whatever remains (possibly no ids); otherwise null until there is one. */
  take(final: boolean): TextBody | null;
}

/** The registry's lookup, handed to createStage so a kind can ask its neighbours' descriptors without importing it. */
export type KindLookup = (kind: StageKind) => StageKindDescriptor;

export interface StageKindDescriptor<A = unknown> {
  readonly kind: StageKind;
  /** Token by token (ar: Thinker, Talker) or one forward per chunk or batch (generation: Code2Wav, encoders). */
  readonly workerType: WorkerType;
  /** The stage's max_tokens when the YAML gives none (Thinker: text tokens; Talker: codec frames). */
  readonly defaultMaxTokens: number;
  /** Kinds whose input this kind's output is (the edges that exist, besides those readsText declares); default none. */
  readonly feeds: readonly StageKind[];
  /**
   * A kind that reads another kind's sampled text (tts reads the Thinker's): the kinds it reads it from (these edges
   * exist too) and the processor that chunks the tokens for it, which the producer runs.
   */
  readonly readsText?: {
    readonly from: readonly StageKind[];
    feed(asyncChunk: boolean): TextFeed;
  };
  /** What it can send the client (final_output_type), if anything (default: nothing). */
  readonly finalOutput: FinalOutputType | null;
  /** Requests enter at a stage of this kind (its prompt comes with `add`); default false. */
  readonly entry: boolean;
  /** Reads its input from the request itself (media from main), not from another stage; default false. */
  readonly readsRequest: boolean;
  /** Which of a request's sampling overrides apply to it: the text's (`sampling`, the default) or the speech's. */
  readonly requestSampling: 'sampling' | 'talkerSampling';
  /**
   * Generated models are sized after their neighbours: inputs first (sizes flow downstream), or after their
   * consumers (an encoder's width is the Thinker's hidden size). Default: inputs.
   */
  readonly sizedFrom: 'inputs' | 'consumers';
  /** Its part of a request's `add` (AddRequest.args), built when main admits the request. */
  addArgs(ctx: AddArgsContext): A;
  /** Its own YAML section, if it has one. */
  readonly settings?: KindSettings;
  /** The YAML schema of a generated model section (preset, seed, size overrides). */
  modelSchema(modality: MediaModality | undefined): TSchema;
  /** A generated model's spec from its section and neighbours; null with problems recorded. */
  resolveGeneratedModel(ctx: GeneratedModelContext, problems: ProblemSink): ModelSpec | null;
  /** In the stage process: loads (building on first use) the model and builds the core. */
  createStage(ctx: StageContext, graph: StageGraph, kinds: KindLookup): Promise<BuiltStage>;
  /** Loads the model as a stage would (one thread), reports its facts and unloads it (`chorus models`). */
  probe(spec: StageSpec, graph: StageGraph): Promise<ModelFacts>;

  // What main reads of a kind, asked of the descriptor so the engine names no kind. Absent: the kind has none of it.
  /**
   * Entry kinds: what the config says of the model a prompt is rendered for (a generated model's vocabulary, which
   * sizes the byte tokenizer, and its positions, which bound a prompt); nothing for a file model (known at load).
   */
  readonly promptLimits?: (model: ModelSpec) => PromptLimits;
  /** Kinds that make or shape a request's audio: the part of its format their READY facts say. */
  readonly audioFacts?: (facts: ModelFacts) => Partial<AudioOutputFacts>;
  /** Kinds whose outputs the encoder-output store keeps: their identity in its keys, from READY facts. */
  readonly ecIdentity?: (facts: ModelFacts) => string | undefined;
  /** Kinds with a prefix cache main routes by (KV-aware routing): the blocks an instance holds, from its stats. */
  readonly prefixHeld?: (stats: StageStats) => HeldBlocks | undefined;
  /**
   * Kinds that act on a request's first audio reaching main (stages/requestEvents.ts FirstAudio: the Thinker ends
   * its first-packet hold, the Talker stops fitting its first chunk to the held rows). Main tells only these: a
   * message to any other kind wakes its process for nothing while the answer's audio is being made. `always`: at
   * every end of the hold; `beforeAudio`: only when the hold ends before the request's audio reached main (load
   * arrived): audio out means the kind has already done what the message would change (the Talker made its first
   * chunk).
   */
  readonly hearsFirstAudio?: 'always' | 'beforeAudio';
}

/** What most kinds are, which a kind's declaration leaves out unless it differs (defineStageKind). */
const COMMON_KIND = {
  feeds: [],
  finalOutput: null,
  entry: false,
  readsRequest: false,
  requestSampling: 'sampling',
  sizedFrom: 'inputs',
} as const satisfies Partial<StageKindDescriptor>;

/** A kind's descriptor as its folder declares it: the properties of COMMON_KIND only where the kind differs. */
export type StageKindDeclaration<A> = Omit<StageKindDescriptor<A>, keyof typeof COMMON_KIND> &
  Partial<Pick<StageKindDescriptor<A>, keyof typeof COMMON_KIND>>;

export function defineStageKind<A>(declared: StageKindDeclaration<A>): StageKindDescriptor<A> {
  return { ...COMMON_KIND, ...declared };
}

export interface PromptLimits {
  readonly vocabSize?: number;
  readonly maxPositions?: number;
}

/**
 * A kind's facts from a READY, read through its own schema (stages/<kind>/protocol.ts): undefined when they are not
 * its kind's (another kind's stage, or facts that do not hold to it).
 */
export function factsIn<S extends TSchema>(schema: S, facts: ModelFacts): Static<S> | undefined {
  let check = compiledFacts.get(schema);
  if (!check) compiledFacts.set(schema, (check = TypeCompiler.Compile(schema)));
  return check.Check(facts) ? (facts as Static<S>) : undefined;
}

/**
 * Each kind's facts schema compiled once (as src/control/controlChecks.ts does for control messages). Main reads
 * facts for every request it plans, before its adds leave (the Thinker's add asks for its Talker's frames per token,
 * the Talker's for its Code2Wav's state), through every chosen instance's facts; `Value.Check` walks the schema each
 * time.
 */
const compiledFacts = new WeakMap<TSchema, TypeCheck<TSchema>>();

/**
 * Some of a kind's READY facts, by name (a descriptor's audioFacts): none when the facts are not its kind's, or a
 * named fact is absent from them.
 */
export function factsPicked<S extends TSchema, K extends keyof Static<S> & string>(
  schema: S,
  names: readonly K[],
): (facts: ModelFacts) => Partial<Pick<Static<S>, K>> {
  return (facts) => {
    const mine = factsIn(schema, facts);
    const picked: Partial<Pick<Static<S>, K>> = {};
    if (mine) for (const name of names) if (mine[name] !== undefined) picked[name] = mine[name];
    return picked;
  };
}

/** A kind's READY facts that its loaded runner holds as properties of the same names. */
export function runnerFacts<K extends string, R, N extends keyof R & string>(
  kind: K,
  runner: R,
  names: readonly N[],
): { readonly kind: K } & Pick<R, N> {
  const picked = {} as Pick<R, N>;
  for (const name of names) picked[name] = runner[name];
  return { kind, ...picked };
}

/** The stage's bring-your-own model file, if it has one (reported in READY). */
export function modelFilesOf(spec: StageSpec): string[] {
  return spec.model.source === 'file' ? [spec.model.path] : [];
}

/**
 * createStage and probe for a kind whose stage is "load a runner, wrap it in a core": the runner and the core are
 * loaded through these functions (lazily imported by the kind), the facts read off the loaded runner.
 */
export function runnerStage<R extends { close(): Promise<void> }>(parts: {
  load(spec: StageSpec, graph: StageGraph): Promise<R>;
  core(ctx: StageContext, runner: R, graph: StageGraph, kinds: KindLookup): Promise<StageCore>;
  facts(runner: R): ModelFacts;
}): Pick<StageKindDescriptor, 'createStage' | 'probe'> {
  return {
    async createStage(ctx, graph, kinds) {
      const runner = await parts.load(ctx.spec, graph);
      try {
        const core = await parts.core(ctx, runner, graph, kinds);
        const close = async () => {
          await core.close();
          await runner.close();
        };
        return { core, facts: parts.facts(runner), modelFiles: modelFilesOf(ctx.spec), close };
      } catch (err) {
        await runner.close();
        throw err;
      }
    },
    async probe(spec, graph) {
      const runner = await parts.load({ ...spec, engine: { ...spec.engine, threads: 1 } }, graph);
      await runner.close();
      return parts.facts(runner);
    },
  };
}
