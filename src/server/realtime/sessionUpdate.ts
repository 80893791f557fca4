/**
 * session.update's fields, checked and applied to the session's state. Everything is checked before anything
 * changes where a refusal must leave the session as it was (the model, truncation); RealtimeSession then starts or
 * stops what the new settings ask for (the VAD, the voice prefill) and echoes the session.
 */
import { mergeGeneration, resolveMaxTokens, type TokenLimits } from '../generationParams.ts';
import { refuseLongText } from '../promptText.ts';
import { resolveModel, servedModelNames } from '../servedModels.ts';
import { ClientInputError } from '../validate.ts';
import { cacheSaltOf } from '../cachePartition.ts';
import type { Engine } from '../../common/engine.ts';
import type { ChorusError } from '../../common/errors.ts';
import type { MediaChecker } from '../media/MediaChecker.ts';
import type { ResolvedServerOptions } from '../options.ts';
import type { SessionFields } from './clientEvents.ts';
import { normalizeModalities } from './responsePlan.ts';
import { checkTokenLimits, parseTruncation } from './parseTruncation.ts';
import { thinkerPositions } from './PromptPositions.ts';
import type { SessionState } from './serverEvents.ts';
import { resolveTurnDetection } from './turnDetection.ts';
import { transcriptionOfSession } from './transcriptionSetting.ts';
import { mergeTools } from './realtimeTools.ts';
import { parseTracing } from './sessionTracing.ts';

export interface SessionUpdateContext {
  readonly engine: Engine;
  readonly options: ResolvedServerOptions;
  readonly tokenLimits: TokenLimits;
  readonly media: MediaChecker;
  /** The cache partition of the session's API key (cachePartition.ts); null: none. */
  readonly tenant?: string | null;
  /** Why semantic_vad's end-of-turn model does not load, once known (such a request is then refused at once). */
  readonly turnModelFailure?: () => ChorusError | null;
}

export function applySessionUpdate(s: SessionFields, state: SessionState, ctx: SessionUpdateContext): void {
  // Checked before anything changes: a refused model or truncation leaves the session as it was.
  const model =
    s.model === undefined
      ? undefined
      : resolveModel(s.model, servedModelNames(ctx.options.modelName, ctx.engine.graph), 'session.model');
  const truncation = s.truncation === undefined ? undefined : parseTruncation(s.truncation);
  const transcription = transcriptionOfSession(s);
  const tools = mergeTools(s, state.tools, 'session');
  const tracing = s.tracing === undefined ? undefined : parseTracing(s.tracing);
  if (truncation !== undefined) {
    const limits = ctx.tokenLimits;
    const maxOutputTokens = s.max_output_tokens ?? state.maxOutputTokens;
    const answer = resolveMaxTokens(maxOutputTokens, limits, 'session.max_output_tokens') ?? limits.stageDefault;
    checkTokenLimits(truncation, thinkerPositions(ctx.engine.graph), answer);
    state.truncation = truncation;
  }
  if (s.max_output_tokens !== undefined) {
    resolveMaxTokens(s.max_output_tokens, ctx.tokenLimits, 'session.max_output_tokens');
    state.maxOutputTokens = s.max_output_tokens;
  }
  if (s.output_modalities) state.outputModalities = normalizeModalities(s.output_modalities);
  if (s.instructions !== undefined) {
    // Instructions go into every prompt and are never truncated: text that cannot fit one is refused here.
    refuseLongText(Buffer.byteLength(s.instructions, 'utf8'), ctx.tokenLimits, {
      what: 'session.instructions',
      param: 'session.instructions',
      fix: 'send shorter instructions (they go into every prompt)',
    });
    state.instructions = s.instructions;
  }
  if (s.audio?.output?.voice !== undefined) state.voice = s.audio.output.voice;
  const turns = s.audio?.input?.turn_detection !== undefined ? s.audio.input.turn_detection : s.turn_detection;
  if (turns && !ctx.media.accepts('audio'))
    throw new ClientInputError(
      'turn_detection needs speech input, and this pipeline has no audio encoder and no speech-to-text: serve a ' +
        'config with one (configs/tiny-omni.yaml, configs/assistant.yaml), or keep turn_detection null and send text',
      'session.audio.input.turn_detection',
    );
  state.turnDetection = resolveTurnDetection(
    turns,
    state.turnDetection,
    ctx.engine.graph.semanticVad,
    ctx.turnModelFailure?.() ?? null,
  );
  if (transcription !== undefined) state.transcription = transcription;
  state.generation = mergeGeneration(state.generation, s);
  state.tools = tools;
  if (model !== undefined) state.model = model;
  if (tracing !== undefined) state.tracing = tracing;
  if (s.cache_salt !== undefined) state.cacheSalt = cacheSaltOf(ctx.tenant ?? null, s.cache_salt);
}
