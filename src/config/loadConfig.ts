/**
 * YAML -> the validated, defaulted, deeply frozen StageGraph (types.ts). Validation runs in two passes:
 * the schema first (types, unknown keys), then the cross-field rules (graph shape, processors, model
 * sizes), which need well-typed input. Within a pass every problem is collected and reported at once.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Static } from '@sinclair/typebox';
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import { resolveEcStore } from './ecStore.ts';
import { resolveConnectors } from './connectors.ts';
import { resolveEncoderSettings } from './encoders.ts';
import { DEFAULT_AUTO_TRUNCATION_POSITIONS, DEFAULT_CAMERA } from '../common/realtimeSettings.ts';
import { defaults, LIVE_WAIT_FACTOR, parseByteSize } from './defaults.ts';
import { resolveScopedEngineKeys } from './engineKeys.ts';
import { resolvePrefixCache } from './prefixCache.ts';
import { resolveMigration } from './migration.ts';
import { resolveSched } from './sched.ts';
import { kindSections, stageKinds } from '../../stages/registry.ts';
import { resolveGraph, type GraphShape } from './graph.ts';
import { importGgufModels } from './ggufModel.ts';
import { resolveModel } from './models.ts';
import { userCacheDir } from './paths.ts';
import { resolveSemanticVad } from './semanticVad.ts';
import { Problems } from './problems.ts';
import { GraphYaml, StageYaml } from './schema.ts';
import { checkFeeds, refuseKindSettings, resolveFinalOutput } from './stageRules.ts';
import type { AsrSpec } from '../common/realtimeSettings.ts';
import type { ChunkPolicy, ConnectorSpec, StageGraph, StageSpec } from '../common/graph.ts';
import type { ModelSpec } from '../common/modelSpec.ts';
import type { SamplingParams } from '../common/samplingParams.ts';
import { assignCpus, checkCpus, withCpus } from './cpus.ts';
import { resolvePlacement } from './placement.ts';
import { check } from './validate.ts';
import { YamlSource } from './yamlSource.ts';

export { defaultConfigPath } from './paths.ts';

type GraphYamlValue = Static<typeof GraphYaml>;
type StageYamlValue = Static<typeof StageYaml>;

export interface ParseOptions {
  /** Folder that relative paths in the YAML resolve against (default: the YAML file's folder, or cwd). */
  readonly baseDir?: string;
  /** Cores to budget threads against (default: os.availableParallelism()). */
  readonly cores?: number;
}

export async function loadConfig(file: string, options: ParseOptions = {}): Promise<StageGraph> {
  const graph = parseConfig(await readConfigText(file), file, options);
  await importGgufModels(graph); // a GGUF Thinker is converted into the model cache on first use
  return graph;
}

/** A config file's text (to parse as it is, or changed first: the bench's variants); a file not read names it. */
export async function readConfigText(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (cause) {
    throw new ChorusError(ErrorCodes.CONFIG_NOT_FOUND, `cannot read config ${file}: ${(cause as Error).message}`, {
      cause,
    });
  }
}

/** `file` names the source in messages; '<embedded>' for text that has no file. */
export function parseConfig(text: string, file: string, options: ParseOptions = {}): StageGraph {
  const source = new YamlSource(text);
  const problems = new Problems(file, source);
  const yaml = checkedYaml(source, problems);

  const embedded = file === '<embedded>';
  const baseDir = options.baseDir ?? (embedded ? process.cwd() : path.dirname(path.resolve(file)));
  const connectors = resolveConnectors(yaml.connectors, problems);
  const shape = resolveGraph(
    yaml.stages.map((s, index) => ({ index, stageId: s.stage_id, kind: s.kind, inputs: s.inputs ?? [] })),
    Object.keys(connectors),
    problems,
  );
  const stages = shape ? resolveStages(yaml, shape, connectors, baseDir, problems) : [];
  const ecStore = resolveEcStore(yaml.ec_store, connectors, stages.filter((s) => s.encoder).length, problems);
  const semanticVad = resolveSemanticVad(yaml.realtime?.semantic_vad, baseDir, problems);
  problems.throwIfAny();

  const chunkPolicy = resolveChunkPolicy(yaml.chunk_policy);
  warnAboutChunkPolicy(chunkPolicy, yaml.chunk_policy, problems);
  const cores = options.cores ?? os.availableParallelism();
  const cpus = assignCpus(yaml, cores, checkCpus(yaml, cores, problems), problems);
  warnAboutThreads(stages, cores, problems);
  return deepFreeze({
    file: embedded ? file : path.resolve(file),
    asyncChunk: yaml.async_chunk ?? defaults.asyncChunk,
    scheduling: yaml.scheduling ?? defaults.scheduling,
    routing: yaml.routing ?? defaults.routing,
    kvPredictionMs: yaml.kv_prediction_ms ?? defaults.kvPredictionMs,
    admission: {
      // Absent: the default bound; null: none.
      maxQueueMs: orDefault(yaml.admission?.max_queue_ms, defaults.admission.maxQueueMs),
      sloTtfpMs: orDefault(yaml.admission?.slo_ttfp_ms, defaults.admission.sloTtfpMs),
      runningLimit: yaml.admission?.running_limit ?? defaults.admission.runningLimit,
    },
    stageHangMs: yaml.stage_hang_ms ?? defaults.stageHangMs,
    stageNice: yaml.stage_nice ?? defaults.stageNice,
    cpuWakeupLatencyUs: orDefault(yaml.cpu_wakeup_latency_us, defaults.cpuWakeupLatencyUs),
    modelAliases: yaml.model_aliases ?? [],
    asr: asrOf(yaml, baseDir),
    cachePartition: yaml.security?.cache_partition ?? defaults.cachePartition,
    realtimeResume: {
      windowMs: yaml.realtime?.resume_window_ms ?? defaults.realtimeResume.windowMs,
      bufferBytes: parseByteSize(yaml.realtime?.resume_buffer_bytes ?? defaults.realtimeResume.bufferBytes),
    },
    realtimeCamera: {
      maxFrames: yaml.realtime?.camera?.max_frames ?? DEFAULT_CAMERA.maxFrames,
      duplicateThreshold: yaml.realtime?.camera?.duplicate_threshold ?? DEFAULT_CAMERA.duplicateThreshold,
    },
    semanticVad,
    autoTruncationPositions: yaml.realtime?.auto_truncation_positions ?? DEFAULT_AUTO_TRUNCATION_POSITIONS,
    modelsDir: modelsDirOf(yaml, baseDir),
    connectors,
    chunkPolicy,
    ecStore,
    stages: stages.map((s) => withCpus(s, cpus.get(s.stageId))),
    entryStageId: yaml.stages[shape!.entry].stage_id,
    warnings: problems.warnings,
    configHash: createHash('sha256').update(text).digest('hex'),
  });
}

/** The YAML as the schema types it; syntax and schema problems are thrown, every one at once, with their lines. */
function checkedYaml(source: YamlSource, problems: Problems): GraphYamlValue {
  for (const p of source.syntaxProblems) problems.addAtLine(p.line, p.message);
  problems.throwIfAny();
  const value = source.value;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    problems.add([], 'the file must be a mapping with at least a `stages:` list (see configs/tiny-omni.yaml)');
    problems.throwIfAny();
  }
  if (!check(GraphYaml, value, [], problems)) problems.throwIfAny();
  return value as GraphYamlValue;
}

function warnAboutChunkPolicy(
  chunkPolicy: StageGraph['chunkPolicy'],
  yaml: GraphYamlValue['chunk_policy'],
  problems: Problems,
): void {
  const { initialCodecChunkFrames: first, codecChunkFrames, chunkTimeoutMs } = chunkPolicy;
  if (first !== null && first > codecChunkFrames) {
    problems.warn(
      ['chunk_policy', 'initial_codec_chunk_frames'],
      `${first} is above codec_chunk_frames (${codecChunkFrames}); the first chunk is capped at ${codecChunkFrames}`,
    );
  }
  const maxWait = yaml?.max_chunk_wait_ms;
  if (maxWait !== undefined && maxWait < chunkTimeoutMs) {
    problems.warn(
      ['chunk_policy', 'max_chunk_wait_ms'],
      `${maxWait} is below chunk_timeout_ms (${chunkTimeoutMs}); a chunk wait's first deadline is that, so waits ` +
        `end at ${chunkTimeoutMs}`,
    );
  }
}

/**
 * Stages of a pipeline take turns on the cores, so more single-threaded stages than cores is the normal case (the
 * shipped configs on 2 cores): only threads a stage could give back are worth a warning.
 */
function warnAboutThreads(stages: readonly StageSpec[], cores: number, problems: Problems): void {
  const threads = stages.reduce((sum, s) => sum + s.engine.threads * s.replicas, 0);
  const multi = stages.filter((s) => s.engine.threads > 1);
  if (threads <= cores || multi.length === 0) return;
  problems.warn(
    ['stages'],
    `the stages ask for ${threads} onnxruntime threads (threads x replicas) on ${cores} cores: they will ` +
      `time-share the CPU, so per-step latency rises under load; lower threads of ` +
      multi.map((s) => `${s.stageId} (${s.engine.threads})`).join(', '),
  );
}

function asrOf(yaml: GraphYamlValue, baseDir: string): AsrSpec | null {
  const asr = yaml.asr;
  if (!asr) return null;
  const model =
    'path' in asr.model
      ? { path: path.resolve(baseDir, asr.model.path) }
      : { pythonPackage: asr.model.python_package, dir: asr.model.dir };
  return { model, threads: asr.threads ?? 1 };
}

function modelsDirOf(yaml: GraphYamlValue, baseDir: string): string {
  return yaml.models_dir === undefined
    ? path.join(userCacheDir(), defaults.modelsDir)
    : path.resolve(baseDir, yaml.models_dir);
}

function resolveStages(
  yaml: GraphYamlValue,
  shape: GraphShape,
  connectors: Readonly<Record<string, ConnectorSpec>>,
  baseDir: string,
  problems: Problems,
): StageSpec[] {
  const entry = yaml.stages[shape.entry];
  if (!stageKinds[entry.kind].entry) {
    problems.add(
      ['stages', shape.entry, 'kind'],
      `the entry stage (the one requests enter; it has no inputs but encoders) must be a thinker, got ${entry.kind}`,
    );
  }
  const models = resolveModels(yaml, shape, baseDir, problems);
  checkEncoderFeeds(yaml, shape, problems);
  const out: Omit<StageSpec, 'placement' | 'minReplicas' | 'joinable'>[] = [];
  for (const index of shape.order) {
    const s = yaml.stages[index];
    const stage = { index, stageId: s.stage_id, kind: s.kind };
    const model = models.get(s.stage_id) ?? null;
    const inputs = shape.inputs[index];
    refuseKindSettings(index, s, problems);
    const consumers = (shape.consumers.get(s.stage_id) ?? []).map((i) => ({
      index: i,
      stageId: yaml.stages[i].stage_id,
      kind: yaml.stages[i].kind,
    }));
    checkFeeds(stage, consumers, problems);
    const finalOutput = s.final_output ?? false;
    const finalOutputType = resolveFinalOutput(stage, finalOutput, s.final_output_type, problems);
    const defaultSamplingParams = resolveSampling(s, index, model, problems);
    if (s.encoder !== undefined && !stageKinds[s.kind].readsRequest) {
      problems.add(
        ['stages', index, 'encoder'],
        `only encoder stages take \`encoder:\` settings (this stage is a ${s.kind})`,
      );
    }
    refuseOthersSections(s, index, problems);
    if (s.encoder?.video !== undefined && s.encoder.modality === 'audio') {
      problems.add(
        ['stages', index, 'encoder', 'video'],
        'only a vision encoder (modality: image, which then serves video too, or video) takes `video:` settings',
      );
    }
    if (!model) continue;
    out.push({
      stageId: s.stage_id,
      kind: s.kind,
      workerType: stageKinds[s.kind].workerType,
      model,
      engine: {
        maxNumSeqs: s.engine?.max_num_seqs ?? defaults.engine.maxNumSeqs,
        maxNumBatchedTokens: s.engine?.max_num_batched_tokens ?? defaults.engine.maxNumBatchedTokens,
        ...resolveScopedEngineKeys(index, s.engine, stageKinds[s.kind], problems),
        threads: s.engine?.threads ?? defaults.engine.threads,
        ...(s.engine?.nice ? { nice: s.engine.nice } : {}),
        ...resolveSched(index, s.engine?.sched, problems),
        kvCacheBytes: parseByteSize(s.engine?.kv_cache_bytes ?? defaults.engine.kvCacheBytes),
        prefixCache: resolvePrefixCache(index, s.engine?.prefix_cache, stageKinds[s.kind].workerType, model, problems),
        migration: resolveMigration(index, s.engine?.migration, stageKinds[s.kind].readsRequest, problems),
      },
      inputs,
      finalOutput,
      finalOutputType,
      defaultSamplingParams,
      replicas: s.replicas ?? defaults.replicas,
      ...(stageKinds[s.kind].readsRequest && s.encoder
        ? { encoder: resolveEncoderSettings(s.encoder, model, yaml.on_encoder_failure) }
        : {}),
      ...kindSettings(s),
    });
  }
  if (!yaml.stages.some((s) => s.final_output)) {
    problems.add(['stages'], 'no stage has `final_output: true`, so a request could never return anything');
  }
  const raw = new Map(yaml.stages.map((s, index) => [s.stage_id, { index, yaml: s }]));
  return resolvePlacement(out, raw, connectors, problems);
}

/** A kind's own section on a stage of another kind is an error, not ignored (only tts stages take `tts:`). */
function refuseOthersSections(s: StageYamlValue, index: number, problems: Problems): void {
  const sections = s as Readonly<Record<string, unknown>>;
  for (const { kind, section } of kindSections()) {
    if (kind === s.kind || sections[section.key] === undefined) continue;
    problems.add(
      ['stages', index, section.key],
      `only ${kind} stages take \`${section.key}:\` settings (this stage is a ${s.kind})`,
    );
  }
}

/** The stage's own kind's section, resolved by its descriptor (defaults when absent); nothing for other kinds. */
function kindSettings(s: StageYamlValue): { settings?: unknown } {
  const section = stageKinds[s.kind].settings;
  if (!section) return {};
  return { settings: section.resolve((s as Readonly<Record<string, unknown>>)[section.key] as never) };
}

/**
 * Every stage's model. Upstream models resolve first (topological order), since sizes flow downstream (the
 * Talker's condition width from the Thinker); encoders go last, because their width comes from the Thinker they feed.
 */
function resolveModels(
  yaml: GraphYamlValue,
  shape: GraphShape,
  baseDir: string,
  problems: Problems,
): Map<string, ModelSpec | null> {
  const models = new Map<string, ModelSpec | null>();
  const afterConsumers = (index: number) => stageKinds[yaml.stages[index].kind].sizedFrom === 'consumers';
  const order = [...shape.order.filter((i) => !afterConsumers(i)), ...shape.order.filter(afterConsumers)];
  const defaultPreset = yaml.model_preset ?? defaults.modelPreset;
  const defaultSeed = yaml.model_seed ?? defaults.modelSeed;
  for (const index of order) {
    const s = yaml.stages[index];
    const related = (ids: readonly string[]) =>
      ids.map((id) => {
        const i = yaml.stages.findIndex((u) => u.stage_id === id);
        return { stageId: id, index: i, kind: yaml.stages[i].kind, model: models.get(id) ?? null };
      });
    if (stageKinds[s.kind].readsRequest && !s.encoder) {
      problems.add(
        ['stages', index],
        'an encoder stage needs `encoder: {modality: audio}` (or image): what it encodes',
      );
      models.set(s.stage_id, null);
      continue;
    }
    const model = resolveModel(
      {
        index,
        stageId: s.stage_id,
        kind: s.kind,
        raw: s.model,
        defaultPreset,
        defaultSeed,
        baseDir,
        modelsDir: modelsDirOf(yaml, baseDir),
        inputs: related(shape.inputs[index].map((i) => i.from)),
        consumers: related((shape.consumers.get(s.stage_id) ?? []).map((i) => yaml.stages[i].stage_id)),
        ...(s.encoder ? { modality: s.encoder.modality } : {}),
      },
      problems,
    );
    models.set(s.stage_id, model);
    if (model?.source === 'file' && stageKinds[s.kind].entry && model.tokenizer === undefined) {
      problems.warn(
        ['stages', index, 'model'],
        'no tokenizer folder: the byte tokenizer will be used, sized from the model vocabulary',
      );
    }
  }
  return models;
}

/** Each encoder feeds exactly one Thinker, and a Thinker takes at most one encoder per modality. */
function checkEncoderFeeds(yaml: GraphYamlValue, shape: GraphShape, problems: Problems): void {
  const byThinker = new Map<string, Map<string, string>>();
  yaml.stages.forEach((s, index) => {
    if (!stageKinds[s.kind].readsRequest) return;
    const consumers = shape.consumers.get(s.stage_id) ?? [];
    if (consumers.length !== 1) {
      const what = consumers.length === 0 ? 'no stage reads from it' : `${consumers.length} stages read from it`;
      problems.add(
        ['stages', index],
        `encoder "${s.stage_id}" must feed exactly one thinker (${what}): list it in the thinker's inputs`,
      );
      return;
    }
    const thinker = yaml.stages[consumers[0]].stage_id;
    const modality = s.encoder?.modality;
    if (!modality) return;
    const seen = byThinker.get(thinker) ?? new Map<string, string>();
    const other = seen.get(modality);
    if (other) {
      problems.add(
        ['stages', index],
        `thinker "${thinker}" already reads ${modality} from encoder "${other}": one encoder per modality (use ` +
          `replicas for more throughput)`,
      );
    }
    seen.set(modality, s.stage_id);
    byThinker.set(thinker, seen);
  });
}

function resolveSampling(
  s: StageYamlValue,
  index: number,
  model: ModelSpec | null,
  problems: Problems,
): SamplingParams {
  const p = s.default_sampling_params ?? {};
  const sampling: SamplingParams = {
    temperature: p.temperature ?? defaults.sampling.temperature,
    topK: p.top_k ?? defaults.sampling.topK,
    topP: p.top_p ?? defaults.sampling.topP,
    repetitionPenalty: p.repetition_penalty ?? defaults.sampling.repetitionPenalty,
    frequencyPenalty: defaults.sampling.frequencyPenalty,
    presencePenalty: defaults.sampling.presencePenalty,
    logitBias: {},
    seed: p.seed ?? defaults.sampling.seed,
    maxTokens: p.max_tokens ?? stageKinds[s.kind].defaultMaxTokens,
    stopTokenIds: p.stop_token_ids ?? [],
    ignoreEos: p.ignore_eos ?? defaults.sampling.ignoreEos,
  };
  if (model?.source === 'generated' && model.kind === 'thinker') {
    const at = ['stages', index, 'default_sampling_params'];
    sampling.stopTokenIds.forEach((id, j) => {
      if (id >= model.size.vocabSize)
        problems.add(
          [...at, 'stop_token_ids', j],
          `token id ${id} is outside the vocabulary (vocab_size ${model.size.vocabSize})`,
        );
    });
    if (sampling.maxTokens >= model.size.maxPositions) {
      problems.warn(
        [...at, 'max_tokens'],
        `${sampling.maxTokens} >= max_positions (${model.size.maxPositions}): long answers will be cut at the ` +
          `context length`,
      );
    }
  }
  return sampling;
}

function resolveChunkPolicy(p: GraphYamlValue['chunk_policy']): ChunkPolicy {
  const d = defaults.chunkPolicy;
  const initial = p?.initial_codec_chunk_frames;
  return {
    initialCodecChunkFrames: initial === undefined || initial === 'auto' ? d.initialCodecChunkFrames : initial,
    codecChunkFrames: p?.codec_chunk_frames ?? d.codecChunkFrames,
    codecLeftContextFrames: p?.codec_left_context_frames ?? d.codecLeftContextFrames,
    dynamicInitialChunk: p?.dynamic_initial_chunk ?? d.dynamicInitialChunk,
    chunkTimeoutMs: p?.chunk_timeout_ms ?? d.chunkTimeoutMs,
    maxChunkWaitMs: Math.max(
      p?.chunk_timeout_ms ?? d.chunkTimeoutMs,
      p?.max_chunk_wait_ms ?? (p?.chunk_timeout_ms ?? d.chunkTimeoutMs) * LIVE_WAIT_FACTOR,
    ),
    ttfpTargetMs: p?.ttfp_target_ms ?? d.ttfpTargetMs,
    firstPacketHold: p?.first_packet_hold ?? d.firstPacketHold,
    firstAudioFirst: p?.first_audio_first ?? d.firstAudioFirst,
    speechLeadMs: p?.speech_lead_ms === undefined ? d.speechLeadMs : p.speech_lead_ms,
    speechLeadMinAnswers: p?.speech_lead_min_answers ?? d.speechLeadMinAnswers,
    speakingSlice: p?.speaking_slice === undefined ? d.speakingSlice : p.speaking_slice,
    firstPrefillSplit: p?.first_prefill_split === undefined ? d.firstPrefillSplit : p.first_prefill_split,
  };
}

/** Freezes every nested object and array, so no stage can mutate the shared graph by accident. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** A YAML value where `null` means "none" (kept) and absence means the default. */
function orDefault<T>(value: T | null | undefined, fallback: T | null): T | null {
  return value === undefined ? fallback : value;
}
