/**
 * Modality-aware routing, the policy half: given a snapshot of every ready Thinker and encoder instance's load and
 * measured rates, the (Thinker instance, encoder instance per encoder stage) with the lowest estimated time to first
 * token (estimates within TIE_SECONDS or TIE_SHARE of it are a tie, taken by the instance with fewer in flight).
 * Pure (no clock, no I/O): src/engine/routing/Router.ts builds the snapshot; the requests it routed count in its queues
 * and teach its rates (RoutedRequest.ts, EncoderQueues.ts).
 *
 *   ttft(t, E) = max(queue wait of t, encode time of the items on E) + prefill of the positions t does not hold
 *
 * The positions an instance holds are the prompt's leading blocks in its prefix cache (KvIndex.ts): a conversation's
 * next turn, or a long shared system prompt, goes where its KV is unless queueing there costs more than computing it
 * elsewhere (reference 001: uncached tokens = total - overlap, weighed against the queue).
 * The queue wait and the encoding overlap (the Thinker keeps working through its queue while the encoders run, and
 * a request waiting for rows does not hold its step), so the request's own prefill starts at the later of the two.
 * Encode time of an item is 0 on an encoder-output (EC) store hit whose rows are in that Thinker's process, the cost
 * of fetching its rows when they are elsewhere, and otherwise (rows queued on the encoder + its rows) x the
 * encoder's measured seconds per row for that modality. Items of one modality in a request go to one encoder
 * instance (one upstream per encoder stage for the Thinker).
 *
 * An encoder instance is priced for the Thinker it would feed (reference 001: the pair that answers first): its
 * queue, the items' rows at its own measured rate for their modality (a video's rows are its frames' patches, so
 * this is its per-frame rate over the rows a frame makes; an instance that has measured no video yet is priced at its
 * image rate, the same ViT), and, when it runs on another host than that Thinker, the rows' transfer there.
 */
import type { MediaModality } from '../../common/encoderSettings.ts';

export interface ThinkerLoad {
  readonly instance: string;
  /** Prompt tokens admitted to it that have not produced a first token yet. */
  readonly queuedPrefillTokens: number;
  /** Measured prefill throughput (tokens/s), null until it has answered a request. */
  readonly prefillTokensPerSecond: number | null;
  readonly inFlight: number;
  /** Leading prompt positions its prefix cache holds for this request (KvIndex); absent: none. */
  readonly cachedPositions?: number;
  /** The machine it runs on; absent: main's. */
  readonly host?: string;
}

export interface EncoderLoad {
  readonly instance: string;
  readonly stageId: string;
  readonly modality: MediaModality;
  /** Rows of the items sent to it that it has not finished. */
  readonly queuedRows: number;
  /** Measured encode time per output row, null until it has finished a request. */
  readonly secondsPerRow: number | null;
  /** The same measured per modality (from requests whose items on it were of that modality alone). */
  readonly secondsPerRowOf?: Readonly<Partial<Record<MediaModality, number>>>;
  readonly inFlight: number;
  /** The machine it runs on; absent: main's. Its rows reach a Thinker on another machine over the network. */
  readonly host?: string;
}

export interface RouteItem {
  readonly index: number;
  readonly modality: MediaModality;
  readonly numEmbeddings: number;
  /** The encoder stage that takes it. */
  readonly stageId: string;
}

/** Where the encoder-output (EC) store holds an item's rows: null on a miss. */
export interface EcEntry {
  /** Thinker instances whose process holds the rows (no fetch needed there). */
  readonly localTo: readonly string[];
  /** In Redis: any Thinker instance gets them with one fetch. Neither local nor remote: a miss for that Thinker. */
  readonly remote: boolean;
}

export type EcLookup = (item: RouteItem) => EcEntry | null;

/** Rates assumed for an instance that has measured nothing yet (and no other instance of its stage has either). */
export interface RouteDefaults {
  readonly prefillTokensPerSecond: number;
  readonly secondsPerRow: Readonly<Record<MediaModality, number>>;
  /** Fetching one row of an EC entry held by another process (Redis). */
  readonly fetchSecondsPerRow: number;
  /** Sending one encoded row from an encoder to a Thinker on another host (their edge's connector). */
  readonly transferSecondsPerRow: number;
}

export interface LoadSnapshot {
  readonly thinkers: readonly ThinkerLoad[];
  readonly encoders: readonly EncoderLoad[];
  readonly ecLookup: EcLookup;
  readonly defaults: RouteDefaults;
}

export interface RouteRequest {
  /** The expanded prompt (media placeholders counted as their rows). */
  readonly promptTokens: number;
  readonly items: readonly RouteItem[];
}

/**
 * Why the choice was made (a label of chorus_route_decisions_total): `single` = one Thinker instance and one
 * instance per encoder stage; `ec_local` = the chosen Thinker holds an EC entry the request needs and that changed
 * the choice; `kv_overlap` = the chosen Thinker's prefix cache holds more of the prompt than another's;
 * `shorter_queue` = it has the fewest queued prefill tokens; `faster` = it is measured faster though more tokens are
 * queued on it; `unmeasured` = no instance had measured anything yet (defaults only).
 */
export type RouteReason = 'single' | 'ec_local' | 'kv_overlap' | 'shorter_queue' | 'faster' | 'unmeasured';

export interface RouteChoice {
  readonly thinker: string;
  /** Encoder stage id -> instance. */
  readonly encoders: ReadonlyMap<string, string>;
  readonly predictedTtftSeconds: number;
  readonly reason: RouteReason;
  /** Prompt positions the chosen Thinker's prefix cache holds (0 without one). */
  readonly cachedPositions: number;
  /** Items served from the EC store (no encoder run). */
  readonly ecHits: readonly number[];
}

/** Estimated TTFTs within this much (or this share) of the lowest count as equal: fewest in flight wins among them. */
const TIE_SECONDS = 0.005;
const TIE_SHARE = 0.25;

/** Mean of the measured values, or null when none is measured. */
function meanMeasured(values: readonly (number | null)[]): number | null {
  const measured = values.filter((v): v is number => v !== null && Number.isFinite(v) && v > 0);
  return measured.length === 0 ? null : measured.reduce((a, b) => a + b, 0) / measured.length;
}

/**
 * The best instance per encoder stage for the request's missed items, for a Thinker on `thinkerHost`, and when its
 * rows would be there.
 */
function pickEncoders(
  snapshot: LoadSnapshot,
  missed: readonly RouteItem[],
  stageIds: readonly string[],
  thinkerHost: string | undefined,
): { encoders: Map<string, string>; readySeconds: number } {
  const encoders = new Map<string, string>();
  let readySeconds = 0;
  for (const stageId of stageIds) {
    const pool = snapshot.encoders.filter((e) => e.stageId === stageId);
    if (pool.length === 0) continue;
    // An instance that has measured nothing (for a modality) is assumed as fast as its measured peers (else its own
    // rate for any modality, else the default).
    const peers = meanMeasured(pool.map((e) => e.secondsPerRow));
    const peersOf = (m: MediaModality) => meanMeasured(pool.map((e) => e.secondsPerRowOf?.[m] ?? null));
    const rateOf = (e: EncoderLoad, m: MediaModality) =>
      e.secondsPerRowOf?.[m] ?? peersOf(m) ?? e.secondsPerRow ?? peers ?? snapshot.defaults.secondsPerRow[m];
    const items = missed.filter((i) => i.stageId === stageId);
    const rows = items.reduce((sum, i) => sum + i.numEmbeddings, 0);
    let best: { instance: string; seconds: number; inFlight: number } | null = null;
    for (const e of pool) {
      const queued = e.queuedRows * (e.secondsPerRow ?? peers ?? snapshot.defaults.secondsPerRow[pool[0].modality]);
      const own = items.reduce((sum, i) => sum + i.numEmbeddings * rateOf(e, i.modality), 0);
      const transfer = e.host !== thinkerHost ? rows * snapshot.defaults.transferSecondsPerRow : 0;
      const seconds = queued + own + transfer;
      // Ties (an idle pool, or no missed items) go to the instance with fewer requests in flight.
      if (!best || seconds < best.seconds || (seconds === best.seconds && e.inFlight < best.inFlight))
        best = { instance: e.instance, seconds, inFlight: e.inFlight };
    }
    encoders.set(stageId, best!.instance);
    if (rows > 0) readySeconds = Math.max(readySeconds, best!.seconds);
  }
  return { encoders, readySeconds };
}

/** The route with the lowest estimated TTFT; null when there is no Thinker instance to route to. */
export function chooseRoute(snapshot: LoadSnapshot, request: RouteRequest): RouteChoice | null {
  if (snapshot.thinkers.length === 0) return null;
  const entries = new Map(request.items.map((item) => [item.index, snapshot.ecLookup(item)]));
  const stageIds = [...new Set(request.items.map((i) => i.stageId))];
  const measuredRate = meanMeasured(snapshot.thinkers.map((t) => t.prefillTokensPerSecond));
  const rateOf = (t: ThinkerLoad) =>
    t.prefillTokensPerSecond ?? measuredRate ?? snapshot.defaults.prefillTokensPerSecond;

  interface Scored {
    readonly t: ThinkerLoad;
    readonly ttft: number;
    readonly encoders: Map<string, string>;
    readonly hits: readonly number[];
    /** Items whose rows this Thinker holds in-process. */
    readonly localHits: number;
  }
  const scored: Scored[] = snapshot.thinkers.map((t) => {
    const queueSeconds = t.queuedPrefillTokens / rateOf(t);
    // Per Thinker: rows in its process cost nothing; rows in Redis one fetch; rows held only by another process
    // (an EC store without Redis) are a miss for it, like rows nobody holds.
    const local = (i: RouteItem) => entries.get(i.index)?.localTo.includes(t.instance) === true;
    const fetched = (i: RouteItem) => !local(i) && entries.get(i.index)?.remote === true;
    const missed = request.items.filter((i) => !local(i) && !fetched(i));
    const fetchSeconds = request.items
      .filter(fetched)
      .reduce((sum, i) => sum + i.numEmbeddings * snapshot.defaults.fetchSecondsPerRow, 0);
    const { encoders, readySeconds } = pickEncoders(snapshot, missed, stageIds, t.host);
    const ready = Math.max(queueSeconds, readySeconds + fetchSeconds);
    return {
      t,
      ttft: ready + Math.max(0, request.promptTokens - (t.cachedPositions ?? 0)) / rateOf(t),
      encoders,
      hits: request.items.filter((i) => local(i) || fetched(i)).map((i) => i.index),
      localHits: request.items.filter(local).length,
    };
  });
  // Estimates this close are a tie (the learned rates are noisy, and on one machine the instances share its
  // cores): the one with fewer requests in flight takes it, else a small rate difference sends every arrival to one
  // instance until its first tokens come back slower (measured: up to 17 in flight on one of two at 25 req/s).
  const fastest = Math.min(...scored.map((s) => s.ttft));
  const tied = scored.filter((s) => s.ttft <= fastest + Math.max(TIE_SECONDS, TIE_SHARE * fastest));
  const best = tied.reduce((a, b) =>
    b.t.inFlight < a.t.inFlight || (b.t.inFlight === a.t.inFlight && b.ttft < a.ttft) ? b : a,
  );

  const reason = ((): RouteReason => {
    const anyMeasured =
      measuredRate !== null || snapshot.encoders.some((e) => e.secondsPerRow !== null && e.secondsPerRow > 0);
    if (scored.length === 1 && stageIds.every((id) => snapshot.encoders.filter((e) => e.stageId === id).length <= 1))
      return 'single';
    if (scored.some((s) => s.localHits < best.localHits)) return 'ec_local';
    if (scored.some((s) => (s.t.cachedPositions ?? 0) < (best.t.cachedPositions ?? 0))) return 'kv_overlap';
    if (!anyMeasured) return 'unmeasured';
    const minQueued = Math.min(...scored.map((s) => s.t.queuedPrefillTokens));
    return best.t.queuedPrefillTokens === minQueued ? 'shorter_queue' : 'faster';
  })();
  return {
    thinker: best.t.instance,
    encoders: best.encoders,
    predictedTtftSeconds: best.ttft,
    reason,
    cachedPositions: best.t.cachedPositions ?? 0,
    ecHits: best.hits,
  };
}
