/**
 * Chorus's public entry: what a program embedding Chorus imports (`import { Orchestrator } from 'chorus'`).
 * package.json's `exports` points here (compiled: dist/src/index.js and its .d.ts); `chorus/basics` (src/basics.ts,
 * re-exported here) is its light half. These two are the only files of the package bench/ may import
 * (test/helpers/importGraph.ts). Every name is listed on purpose: what is not here may change between versions.
 *
 * The first sections are the embedding API (configure, run, serve, observe). The last ones name the parts of a
 * stage and of the transport that a tool may run alone, outside the engine, as the bench's component harnesses do
 * (the bare runners' critical path, the connector microbench, a voice's real-time factor).
 */
export * from './basics.ts';

// Configuration: load and validate a YAML (every problem at once, by path), the defaults, where models are cached.
export { loadConfig, parseConfig, readConfigText } from './config/loadConfig.ts';
export { defaults } from './config/defaults.ts';

// The engine: start the stages of a graph and generate (Orchestrator implements Engine).
export { Orchestrator } from './engine/Orchestrator.ts';
export type { ContentPart, Engine, GenerateRequest, GrammarSpec, OutputEvent, RequestHandle } from './common/engine.ts';

// The front end over an engine: OpenAI chat completions and Realtime (fastify).
export { buildServer, startServer } from './server/app.ts';
export { toolGrammar } from './server/chat/chatTools.ts';
export { ToolCallAssembly, ToolCallStream } from './server/chat/toolCallStream.ts';

// Tracing: spans over OTLP (docs/tracing.md).
export { startTracing, type Tracing } from './tracing/tracing.ts';

// Text and media: tokenizers, audio decoding and features, grammars.
export { ByteTokenizer, createTokenizer, type Tokenizer } from './tokenizer/index.ts';
export { entryTokenizer } from './engine/mediaPrompt.ts';
export { HfTokenizer } from './tokenizer/HfTokenizer.ts';
export { audioFeatures, decodeAudio } from './media/audio.ts';
export { GrammarEngine, byteTokenizerVocab, jsonSchemaSpec, type RequestGrammar } from './grammar/index.ts';

// Processes: how Chorus starts a Node process of its own (stage, client), from sources or from dist/.
export { loaderFlagsFor, moduleFile } from './common/moduleFile.ts';
export { STAGE_NODE_FLAGS } from './worker/StageWorker.ts';
// The machine's CPU wake-up latency as a config asks it held (cpu_wakeup_latency_us): a limit's runners measure on it.
export { CpuWakeupLatency } from './common/cpuWakeupLatency.ts';

// A stage's parts, run alone: the model runners, the processors between stages, sampling, the generated models'
// presets, the GGUF importer, the Piper voice and the tts core.
export { createCode2WavRunner, createTalkerRunner, createThinkerRunner } from '../stages/runners.ts';
export type { Code2WavRunner, TalkerRunner, ThinkerBatchItem, ThinkerRunner } from '../stages/types.ts';
export { createEncoderRunner, type EncoderSpec } from '../stages/encoder/createEncoderRunner.ts';
export { presets } from '../stages/generator/presets.ts';
export { sessionOptions } from '../stages/models/SyncSession.ts';
export { sampleToken } from '../stages/sampling/sampleToken.ts';
export { Thinker2Talker } from '../stages/talker/thinker2talker.ts';
export { Talker2Code2Wav, type CodecChunkOut } from '../stages/code2wav/talker2code2wav.ts';
export { GGUF_WEIGHT_FORMS, type GgufWeightForm } from '../stages/thinker/gguf/ggufDecoder.ts';
export {
  DEFAULT_GGUF_WEIGHTS,
  GGUF_DECODER_FILE,
  importGguf,
  type ImportedGguf,
} from '../stages/thinker/gguf/importGguf.ts';
export { pythonPackageFile } from '../stages/thinker/gguf/pythonPackageFile.ts';
export { OnnxPiperRunner } from '../stages/tts/OnnxPiperRunner.ts';
export { WhisperRunner } from '../stages/asr/WhisperRunner.ts';
export { locateWhisper } from '../stages/asr/locateWhisper.ts';
export { AsrTranscriber } from './server/transcription/AsrTranscriber.ts';
export { DEFAULT_PHRASE_POLICY, PhraseSplitter } from '../stages/tts/PhraseSplitter.ts';
export { PiperPhonemizer } from '../stages/tts/phonemes.ts';
export { phonemeIds } from '../stages/tts/phonemeIds.ts';
export { locateVoice } from '../stages/tts/locateVoice.ts';
export { TtsCore } from '../stages/tts/TtsCore.ts';
export { ttsSettingsOf } from '../stages/tts/ttsSettings.ts';
export type { StageContext } from './worker/StageCore.ts';

// The transport alone: the shared-memory ring, the Redis connector and the key a chunk travels under.
export { chunkKey } from '../transport/Connector.ts';
export { ShmRing } from '../transport/shm/ShmRing.ts';
export { RedisConnector, type RedisConnectorOptions } from '../transport/redis/RedisConnector.ts';
export type { ChunkTransferAdapter } from '../transport/adapter/ChunkTransferAdapter.ts';
export { encodeWorkingBytes } from './media/video/encodeMemory.ts';
