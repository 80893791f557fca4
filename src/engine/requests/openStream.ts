/** The output stream of an admitted request, from its plan: its stages' instances, its outputs, its prompt. */
import type { FinishReason, GenerateRequest } from '../../common/engine.ts';
import type { StageGraph } from '../../common/graph.ts';
import type { AudioOutputFacts } from '../../common/modelFacts.ts';
import { StreamingDetokenizer, type Tokenizer } from '../../tokenizer/index.ts';
import type { AdmissionPlan } from '../admission/planAdmission.ts';
import type { PreparedPrompt } from '../mediaPrompt.ts';
import { RequestStream } from '../RequestStream.ts';
import { textLogprobs } from '../../tokenizer/tokenText.ts';

export interface StreamContext {
  readonly graph: StageGraph;
  readonly tokenizer: Tokenizer;
  /** The pipeline's audio (the pool's READY facts), null without a vocoder. */
  readonly audio: AudioOutputFacts | null;
  readonly onEnd: (stream: RequestStream, reason: FinishReason) => void;
}

export function openStream(
  request: GenerateRequest,
  prompt: PreparedPrompt,
  plan: AdmissionPlan,
  ctx: StreamContext,
  /** When the engine took the request (epoch ms; its adds may have gone before the stream is made). */
  startedAtMs = Date.now(),
): RequestStream {
  const promptIds = prompt.promptTokenIds;
  const stream = new RequestStream(
    plan.requestId,
    plan.instances,
    plan.outputs,
    promptIds.length,
    prompt.items.map((i) => ({ modality: i.modality, numEmbeddings: i.numEmbeddings })),
    new StreamingDetokenizer(ctx.tokenizer, { promptIds }),
    request.modalities.includes('audio') ? ctx.audio : null,
    ctx.onEnd,
    request.ttfpTargetMs ?? ctx.graph.chunkPolicy.ttfpTargetMs,
    startedAtMs,
  );
  if (request.logprobs !== undefined)
    stream.logprobText = (ids, logprobs) => textLogprobs(ctx.tokenizer, ids, logprobs);
  return stream;
}
