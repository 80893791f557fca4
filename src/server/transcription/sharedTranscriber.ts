/**
 * The server's one speech-to-text (AsrTranscriber), when the pipeline's YAML has an `asr:` section: its process is
 * started when the server is ready (the model loads while no one waits on it yet) and stopped when it closes. Null
 * when the pipeline has none: transcription then reports CHORUS_ERR_TRANSCRIPTION_UNAVAILABLE.
 */
import type { FastifyInstance } from 'fastify';
import { getPriority } from 'node:os';
import { encodersOf, type StageGraph } from '../../common/graph.ts';
import { AsrTranscriber } from './AsrTranscriber.ts';

/** Nice levels below the stages of a speech-to-text whose transcripts are beside the answers. */
const BELOW_STAGES = 4;

export function sharedTranscriber(app: FastifyInstance, graph: StageGraph): AsrTranscriber | null {
  if (!graph.asr) return null;
  // A Thinker that hears audio itself needs the transcript only beside its answer: the process runs below the stages
  // (which run stage_nice below the server), so it takes the CPU they leave. Else the transcript is the turn.
  const nice = encodersOf(graph).has('audio') ? Math.min(19, getPriority() + graph.stageNice + BELOW_STAGES) : null;
  const transcriber = new AsrTranscriber(graph.asr, app.log, nice);
  // Not awaited: converting and loading the model takes seconds (past fastify's plugin timeout under load), and the
  // server's other routes need none of it. A transcription waits for it; a load that failed fails each one, naming why.
  app.addHook('onReady', async () => {
    transcriber.start().catch((err: unknown) => app.log.error({ err }, 'speech-to-text failed to load'));
  });
  app.addHook('onClose', async () => transcriber.close());
  return transcriber;
}
