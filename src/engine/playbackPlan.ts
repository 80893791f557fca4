/**
 * What the Talker and Code2Wav schedule a request's audio by (AddRequest.playback): when its first packet is due
 * (its TTFP target, or the default first-packet slack), how long a frame plays, and the measured time from the
 * Talker's chunk to audio at main.
 */
import type { GenerateRequest } from '../common/engine.ts';
import type { StageGraph } from '../common/graph.ts';
import type { AudioOutputFacts } from '../common/modelFacts.ts';
import { DEFAULT_FIRST_PACKET_SLACK_MS } from '../sched/playback.ts';
import type { PlaybackPlan } from '../worker/messages.ts';
import type { InstanceView } from './pool/StageInstance.ts';

export function playbackPlan(
  request: GenerateRequest,
  graph: StageGraph,
  audio: AudioOutputFacts | null,
  admittedAtMs: number,
  chosen: Iterable<InstanceView>,
): PlaybackPlan | undefined {
  if (!audio || !request.modalities.includes('audio')) return undefined;
  const target = request.ttfpTargetMs ?? graph.chunkPolicy.ttfpTargetMs;
  // The stage that makes the client's audio (its final output): how long its step takes is the audio's last hop.
  const vocoder = [...chosen].find((s) => s.spec.finalOutputType === 'audio');
  return {
    firstPacketDeadlineMs: admittedAtMs + (target ?? DEFAULT_FIRST_PACKET_SLACK_MS),
    ttfpTargetMs: target,
    frameMs: (audio.samplesPerFrame / audio.sampleRateHz) * 1000,
    downstreamMs: vocoder?.stats?.stepMs ?? 0,
  };
}
