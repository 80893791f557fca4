/**
 * Where a voice turn's time goes after speech_stopped, measured alone on the runners once the server is gone (the
 * machine to itself, as `chorus bench limit`): the utterance as committed through the audio front end and encoder,
 * and the first-packet limit of a prompt as long as the voice turn's against one as long as the typed sentence's
 * (a row costs the Thinker and the Talker the same whether it came from a token or from the audio encoder).
 */
import {
  audioFeatures,
  createEncoderRunner,
  createTokenizer,
  decodeAudio,
  type EncoderSpec,
  type StageGraph,
} from '../../src/index.ts';
import { timed } from '../common.ts';
import { msOf } from './speech.ts';
import { runLimit } from '../limit/runLimit.ts';
import { percentile } from '../ttfp/metrics.ts';
import type { VoiceBreakdown, VoiceRunRow } from './voiceResults.ts';

export interface BreakdownOptions {
  readonly graph: StageGraph;
  /** The c=1 run (or the lowest concurrency measured). */
  readonly run: VoiceRunRow;
  readonly silenceMs: number;
  /** The utterances as committed: speech with its room noise, up to speech_stopped (pcm16 at 24 kHz). */
  readonly committed: readonly Int16Array[];
  readonly repeats: number;
  readonly seed: number;
}

const median = (values: readonly number[]) => percentile(values, 50);

async function measureEncode(graph: StageGraph, clips: readonly Int16Array[], repeats: number) {
  const spec = graph.stages.find((s) => s.kind === 'encoder' && s.encoder?.modality === 'audio');
  if (!spec || clips.length === 0) return null;
  const m = spec.model;
  if (m.source !== 'file' && m.kind !== 'audio_encoder') return null;
  const encoderSpec: EncoderSpec = m.source === 'file' ? { source: 'file', path: m.path, modality: 'audio' } : m;
  const runner = await createEncoderRunner(encoderSpec, graph.modelsDir, { engine: spec.engine });
  try {
    const frontEnd: number[] = [];
    const encoder: number[] = [];
    const rows: number[] = [];
    for (let i = 0; i < repeats + 1; i++) {
      const clip = clips[i % clips.length];
      const bytes = new Uint8Array(clip.buffer, clip.byteOffset, clip.byteLength);
      let features!: ReturnType<typeof audioFeatures>;
      const f = timed(() => (features = audioFeatures(decodeAudio(bytes, 'pcm16'))));
      const e = timed(() => runner.encode([features]));
      if (i === 0) continue; // warms the session's shapes
      frontEnd.push(f);
      encoder.push(e);
      rows.push(features.numEmbeddings);
    }
    const audioMs = median(clips.map(msOf));
    return { audio_ms: audioMs, rows: median(rows), front_end_ms: median(frontEnd), encoder_ms: median(encoder) };
  } finally {
    await runner.close();
  }
}

export async function measureBreakdown(o: BreakdownOptions): Promise<VoiceBreakdown> {
  const { run, graph } = o;
  const entry = graph.stages.find((s) => s.stageId === graph.entryStageId)!;
  const size = entry.model.source === 'generated' && entry.model.kind === 'thinker' ? entry.model.size : undefined;
  const templateTokens = createTokenizer(entry.model, size).applyChatTemplate([{ role: 'user', content: '' }]).length;
  const limitAt = (promptTokens: number | null) =>
    promptTokens === null
      ? Promise.resolve(null)
      : runLimit({
          graph,
          inputLen: Math.max(1, Math.round(promptTokens) - templateTokens),
          repeats: o.repeats,
          seed: o.seed,
        });
  const encode = await measureEncode(graph, o.committed, o.repeats);
  const limitVoice = await limitAt(run.prompt_tokens.voice);
  const limitText = await limitAt(run.prompt_tokens.text);
  return {
    silence_duration_ms: o.silenceMs,
    speech_stopped_ms: run.speech_stopped_ms.p50,
    vad_end_lag_ms: run.vad_end_lag_ms.p50,
    stopped_to_audio_ms: run.stopped_to_audio_ms.p50,
    text_ttfp_ms: run.text_ttfp_ms.p50,
    engine_ttfp_ms: { voice: run.engine_ttfp_ms.voice.p50, text: run.engine_ttfp_ms.text.p50 },
    prompt_tokens: run.prompt_tokens,
    encode,
    limit_voice: limitVoice,
    limit_text: limitText,
  };
}
