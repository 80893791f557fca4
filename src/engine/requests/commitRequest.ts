/**
 * The commit step of admitting a request: acts on its plan (admission/planRequest.ts). The adds to every chosen
 * instance first (the entry stage starts computing), then the request's record and stream, what main expects back,
 * the first-packet hold, then the media to the encoders. A migrated request's replay sends only what main expects
 * back and the adds (no hold: its client may have its first audio already).
 */
import type { GenerateRequest, RequestHandle } from '../../common/engine.ts';
import { ChorusError, ErrorCodes, serializeError } from '../../common/errors.ts';
import { diagnostics } from '../../common/diagnostics.ts';
import type { StageGraph } from '../../common/graph.ts';
import type { Logger } from '../../common/log.ts';
import type { AudioOutputFacts } from '../../common/modelFacts.ts';
import type { Tokenizer } from '../../tokenizer/index.ts';
import type { ChunkTransferAdapter } from '../../../transport/registry.ts';
import type { AdmissionPlan } from '../admission/planAdmission.ts';
import type { EcStore } from '../ec/EcStore.ts';
import { sendMedia } from '../MediaRoutes.ts';
import type { PreparedPrompt } from '../mediaPrompt.ts';
import type { StagePool } from '../pool/StagePool.ts';
import type { RequestStream } from '../RequestStream.ts';
import type { RouteBooking } from '../routing/Router.ts';
import { openStream } from './openStream.ts';
import { RequestRecord } from './RequestRecord.ts';
import type { RequestRegistry } from './RequestRegistry.ts';
import { tellFirstAudio } from './tellStages.ts';
import { packetMark } from '../../common/packetMarks.ts';
import { processRuns } from '../../common/processCpu.ts';

export interface CommitContext {
  readonly graph: StageGraph;
  readonly tokenizer: Tokenizer;
  readonly audio: AudioOutputFacts | null;
  readonly ec: EcStore | null;
  readonly adapter: ChunkTransferAdapter;
  readonly requests: RequestRegistry;
  readonly pool: StagePool;
  readonly log: Logger;
  /** Every ending, once. */
  readonly onEnd: (stream: RequestStream, reason: string) => void;
}

export function commitRequest(
  ctx: CommitContext,
  request: GenerateRequest,
  prompt: PreparedPrompt,
  plan: AdmissionPlan,
  book: RouteBooking,
): RequestRecord {
  const { graph, tokenizer, audio, onEnd, adapter } = ctx;
  const { requestId } = plan;
  // The adds first: the entry stage computes while main keeps its books (the record, what it expects back, the hold).
  // Nothing a stage answers is read before this returns (main's event loop delivers it), so the order is free; an
  // entry add that cannot go (the prompt's arguments too large for the channel) throws before anything is registered.
  const startedAtMs = Date.now(); // its TTFT and TTFP count from here, before the adds (RequestStream)
  const cancelArrival = ctx.requests.arriving();
  packetMark(requestId, 'adding');
  let later: AdmissionPlan['adds'];
  try {
    later = sendAdds(ctx.pool, plan);
  } catch (err) {
    cancelArrival();
    throw err; // refused before anything was registered: routing never booked it
  }
  const route = book(); // main's books of the choice, once the entry stage computes
  const stream = openStream(request, prompt, plan, { graph, tokenizer, audio, onEnd }, startedAtMs);
  const record = new RequestRecord(stream, {
    request,
    prompt,
    route,
    media: plan.media?.routes ?? null,
    ec: ctx.ec,
    adapter,
  });
  ctx.requests.add(record);
  expectOutputs(ctx, requestId, plan);
  if (later.length > 0) record.addsAfterFirstOutput(() => sendLater(ctx.pool, record, later));
  // Its release goes to the Talker too: one released before its first chunk is sized may size it for the load again.
  ctx.requests.commitHold(record, plan.hold, (audioOut) => tellFirstAudio(ctx.pool, record, audioOut));
  tellEveryFirstAudio(graph, record, ctx.pool);
  const chunkTimeoutMs = graph.chunkPolicy.chunkTimeoutMs;
  if (plan.media)
    sendMedia(requestId, plan.media, adapter, { chunkTimeoutMs, log: ctx.log }, (err) =>
      stream.end('error', serializeError(err)),
    );
  const { modalities } = request;
  const promptTokens = prompt.promptTokenIds.length;
  diagnostics.requestStart.publish({ requestId, modalities, promptTokens, mediaItems: prompt.items.length });
  return record;
}

/**
 * The adds of a new request: sent now, but those that wait for its first output (stageAdds.ts addsAfterFirstOutput),
 * which are counted on their instances now and returned, to be sent then (sendLater).
 */
function sendAdds(pool: StagePool, plan: AdmissionPlan): AdmissionPlan['adds'] {
  for (const { instance, add, afterFirstOutput } of plan.adds)
    if (afterFirstOutput) pool.reserve(instance, add.requestId);
    else pool.admit(instance, add);
  return plan.adds.filter((a) => a.afterFirstOutput);
}

/** The adds that waited for the first output; one that fails (its instance gone meanwhile) ends the request. */
function sendLater(pool: StagePool, record: RequestRecord, later: AdmissionPlan['adds']): void {
  try {
    for (const { instance, add } of later) pool.send(instance, add);
  } catch (err) {
    record.stream.end('error', serializeError(err));
  }
}

/**
 * A migrated request's replay run `runId` sent as planned (no hold: its client may have its first audio already):
 * what main expects back, its adds, then the bytes of the media items the encoder-output store does not hold to
 * their encoders (encoded again from main's bytes: the same rows); the instance of each stage. Nothing is sent, nor
 * the route booked, when an instance it needs is not ready (OVERLOADED, thrown: it waits on).
 */
export function commitReplay(
  ctx: Pick<CommitContext, 'graph' | 'adapter' | 'pool' | 'log'>,
  record: RequestRecord,
  runId: string,
  { plan, book }: { plan: AdmissionPlan; book: RouteBooking },
): ReadonlyMap<string, string> {
  const gone = plan.adds.find(({ instance }) => ctx.pool.instances.get(instance)?.status !== 'ready');
  if (gone) throw new ChorusError(ErrorCodes.OVERLOADED, `${gone.instance} is not ready`);
  record.replayed(book());
  expectOutputs(ctx, runId, plan);
  for (const { instance, add } of plan.adds) ctx.pool.admit(instance, add);
  sendMediaOf(ctx, runId, plan, record.stream);
  return plan.instances;
}

/**
 * A request's next run after an item is encoded again (Reencodes.ts), committed as planned (the record already
 * switched to it: record.rerun): what main expects back, the hold, the adds, then the media to its encoders.
 */
export function commitRerun(
  ctx: Pick<CommitContext, 'graph' | 'adapter' | 'requests' | 'pool' | 'log'>,
  record: RequestRecord,
  plan: AdmissionPlan,
): void {
  const { pool } = ctx;
  const runId = record.runId;
  const { stream } = record;
  const prompt = record.prompt;
  stream.rerun(plan.instances, prompt.promptTokenIds.length, prompt.items);
  expectOutputs(ctx, runId, plan);
  ctx.requests.commitHold(record, plan.hold, (audioOut) => tellFirstAudio(pool, record, audioOut));
  tellEveryFirstAudio(ctx.graph, record, pool);
  for (const { instance, add } of plan.adds) pool.admit(instance, add);
  sendMediaOf(ctx, runId, plan, stream);
}

/**
 * What main expects back from the run's output stages. A wait past its deadline goes on while the producing instance
 * is ready, still holds the run and its process runs (not stopped); the hang watch and the heartbeats judge that it
 * lives (a hung, dead or lost one fails the run itself, CHORUS_ERR_STAGE_HUNG / _DIED / _LOST), so a stage starved of
 * CPU is not taken for a lost chunk (transport/adapter/ChunkTransferAdapter.ts).
 */
function expectOutputs(
  ctx: Pick<CommitContext, 'graph' | 'adapter' | 'pool'>,
  runId: string,
  plan: AdmissionPlan,
): void {
  for (const { expect } of plan.outputs) {
    const producer = (): boolean => {
      const instance = ctx.pool.instances.get(expect.fromInstance);
      if (instance?.status !== 'ready' || !instance.inFlight.has(runId)) return false;
      const pid = instance.remote ? null : (instance.worker?.pid ?? null);
      return pid === null || processRuns(pid); // a remote one lives while it heartbeats (it leaves the pool else)
    };
    ctx.adapter.expect(runId, { ...expect, live: { producer, maxWaitMs: ctx.graph.chunkPolicy.maxChunkWaitMs } });
  }
}

/** A run's media to its encoders (the items the store does not hold); a send that fails ends the request. */
function sendMediaOf(
  ctx: Pick<CommitContext, 'graph' | 'adapter' | 'log'>,
  runId: string,
  plan: AdmissionPlan,
  stream: RequestStream,
): void {
  if (!plan.media) return;
  const chunkTimeoutMs = ctx.graph.chunkPolicy.chunkTimeoutMs;
  sendMedia(runId, plan.media, ctx.adapter, { chunkTimeoutMs, log: ctx.log }, (err) =>
    stream.end('error', serializeError(err)),
  );
}

/** The client's handle on an admitted request: its events, and cancel / pause / resume through the engine. */
export function handleOf(
  record: RequestRecord,
  cancel: (reason?: string) => void,
  setPaused: (paused: boolean) => void,
): RequestHandle {
  return {
    requestId: record.requestId,
    prompt: record.stream.promptTokenDetails(),
    events: record.stream.events.events,
    cancel,
    pause: () => setPaused(true),
    resume: () => setPaused(false),
  };
}

/**
 * First audio first (chunk_policy.first_audio_first) and speech lead (speech_lead_ms): the Thinker hears every spoken
 * answer's first audio, not only a held one's (a held request's release already tells it), so it knows which answers
 * speak, since when, and which still wait for theirs (src/sched/FirstAudioFirst.ts, SpeechLead.ts; the Talker and
 * Code2Wav see their own first output go). After the first
 * packet's event, off its path; only the kinds that hear it `always` are woken.
 */
function tellEveryFirstAudio(graph: StageGraph, record: RequestRecord, pool: StagePool): void {
  const policy = graph.chunkPolicy;
  if (policy.firstAudioFirst || policy.speechLeadMs !== null)
    record.stream.onAudioStarted ??= () => tellFirstAudio(pool, record, true);
}
