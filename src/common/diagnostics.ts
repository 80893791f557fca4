/**
 * Every lifecycle event Chorus publishes on diagnostics_channel, in one place (undici's diagnostics.js). The
 * bench, /metrics and tracing subscribe by these names; publishing costs nothing without subscribers.
 */
import { channel } from 'node:diagnostics_channel';

export const channelNames = {
  /** {requestId, modalities, promptTokens, mediaItems} when the engine admits a request. */
  requestStart: 'chorus:request:start',
  /** {requestId, reason, startedAtMs, firstTextAtMs, firstAudioAtMs} when it ends, however it ends. */
  requestEnd: 'chorus:request:end',
  /**
   * {stageId, instance, ...StageStats, engine} every stats report of a stage instance; `engine` (newEngineId) tags this
   * channel and the two below, so that a subscriber can tell two engines' instances apart (their names are alike).
   */
  stageStats: 'chorus:stage:stats',
  /** {instance, code, signal, engine} when a stage process dies after READY. */
  stageDied: 'chorus:stage:died',
  /** {instance, silentMs, engine} when a stage instance is declared hung (then killed and restarted). */
  stageHung: 'chorus:stage:hung',
  /**
   * {requestId, stageId, reason, outcome, lostInstance, newInstance?, waitMs?, pauseMs?} per request lost with a
   * stage instance whose stage migrates (src/engine/requests/Migrations.ts): outcome migrated (waitMs: from the loss
   * to the replay's admission, the restart it waited for; pauseMs: to the replay's first new output), refused (it
   * could not be replayed) or failed (no live instance in time).
   */
  requestMigrated: 'chorus:request:migrated',
  /** {from, to: 'main', latencyMs, bytes} per output chunk main receives. */
  edgeChunk: 'chorus:edge:chunk',
  /**
   * {requestId, slackMs} per audio packet after a request's first: the audio its listener still had buffered when
   * it was sent (audio sent before it minus time since the first packet; negative: the listener ran dry).
   */
  audioSlack: 'chorus:audio:slack',
  /** {requestId, targetMs, ttfpMs, met} at the first audio packet of a request with a TTFP target. */
  ttfpTarget: 'chorus:audio:ttfpTarget',
  /** {policy, reason} per request routed (src/engine/routing/Router.ts). */
  routeDecision: 'chorus:route:decision',
  /** {requestId, modality, predictedSeconds, actualSeconds} at a request's first text token. */
  routeTtft: 'chorus:route:ttft',
  /** {requestId, ms} when a response's first text / audio bytes are handed to the socket. */
  wsFirstText: 'chorus:ws:firstText',
  wsFirstAudio: 'chorus:ws:firstAudio',
  httpFirstText: 'chorus:http:firstText',
  httpFirstAudio: 'chorus:http:firstAudio',
  /** {where: 'local' | 'remote' | 'miss'} per media item main looks up in the EC store before sending it. */
  ecLookup: 'chorus:ec:lookup',
  /** {stage, bytes} per media item main sends to an encoder stage (its bytes as received). */
  encoderMedia: 'chorus:encoder:media',
  /** {channel, reason} per control message dropped by the guard (src/control/ControlGuard.ts). */
  controlDropped: 'chorus:control:dropped',
  /**
   * Media rows budgeted per Thinker instance (src/engine/MediaRowsBudget.ts): {event: 'held', instance, bytes} when
   * an instance's held bytes change, {event: 'wait'} per request that waits for room, {event: 'refused'} per refusal.
   */
  mediaRows: 'chorus:media:rows',
  /**
   * {reason: 'memory' | 'timeout' | 'lost' | 'kv', modality} per media item main runs its request again for (src/
   * engine/requests/Reencodes.ts): its encode failed for memory or time, its encoder-output store entry was lost, or
   * its encode was skipped for KV its Thinker no longer held.
   */
  mediaReencode: 'chorus:media:reencode',
  /** {modality} per media item main sent to no encoder: its Thinker's prefix cache holds its KV (heldItems.ts). */
  mediaEncodeSkipped: 'chorus:media:encode-skipped',
  /**
   * {event: 'spawned', pid} when a video decoder (ffmpeg) starts, {event: 'exit', pid, code, signal} when it has
   * exited (src/media/video/DecoderSpawner.ts).
   */
  videoDecoder: 'chorus:video:decoder',
  /** {held, us} when an engine takes or lets go of the CPU wake-up latency hold (src/common/cpuWakeupLatency.ts). */
  cpuWakeupLatency: 'chorus:cpu:wakeup-latency',
} as const;

export const diagnostics = {
  requestStart: channel(channelNames.requestStart),
  requestEnd: channel(channelNames.requestEnd),
  stageStats: channel(channelNames.stageStats),
  stageDied: channel(channelNames.stageDied),
  stageHung: channel(channelNames.stageHung),
  requestMigrated: channel(channelNames.requestMigrated),
  edgeChunk: channel(channelNames.edgeChunk),
  audioSlack: channel(channelNames.audioSlack),
  ttfpTarget: channel(channelNames.ttfpTarget),
  routeDecision: channel(channelNames.routeDecision),
  routeTtft: channel(channelNames.routeTtft),
  ecLookup: channel(channelNames.ecLookup),
  encoderMedia: channel(channelNames.encoderMedia),
  controlDropped: channel(channelNames.controlDropped),
  mediaRows: channel(channelNames.mediaRows),
  mediaReencode: channel(channelNames.mediaReencode),
  mediaEncodeSkipped: channel(channelNames.mediaEncodeSkipped),
  videoDecoder: channel(channelNames.videoDecoder),
  cpuWakeupLatency: channel(channelNames.cpuWakeupLatency),
  realtime: { firstText: channel(channelNames.wsFirstText), firstAudio: channel(channelNames.wsFirstAudio) },
  http: { firstText: channel(channelNames.httpFirstText), firstAudio: channel(channelNames.httpFirstAudio) },
};

let engines = 0;

/**
 * A new engine's id, unique in this process: its stage instances' reports carry it (`engine` on chorus:stage:stats,
 * :died, :hung), so a server counts only its own engine's (src/server/metrics/stageMetrics.ts).
 */
export function newEngineId(): string {
  return `engine-${++engines}`;
}
