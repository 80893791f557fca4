/**
 * Clients that stop reading, against the real pipeline (tiny-omni-text-in, its Talker cut to max_num_seqs 2 so two
 * paused readers are all of its slots): another client still gets its first audio while both readers' requests are
 * held (issue 33: it waited for their 30 s chunk timeout), the readers' requests run on to their end when they read
 * again, and a reader paused past the client-stall timeout gets CHORUS_ERR_CLIENT_TOO_SLOW with every stage freed.
 *
 * A reader stops reading at the socket (ws pauses its net.Socket): the kernel buffers fill, then the server's small
 * stream buffer, and the server pauses its request. Over loopback TCP the kernel's took up to ~5.5 MB (the sender's
 * grows to tcp_wmem's 4 MB, the receiver's ~1.5 MB), so readers asked 1200 tokens (~12 MB of audio deltas, ~10 kB a
 * token) to be paused mid-answer on a fast machine, and the file spent 105 of its 134 s in CI running their rests.
 * The server listens on a Unix socket here instead: the kernel holds the sender's buffer, ~200 kB (wmem_default),
 * the same backpressure at the same socket call 25x sooner. Readers ask 300 tokens (~3 MB): every one is paused
 * mid-answer whatever the machine's speed, and each runs its rest to the end once it reads again.
 */
import type { FastifyInstance } from 'fastify';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { tap } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine, RequestHandle } from '../../src/common/engine.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { buildServer, type ServerOptions } from '../../src/server/app.ts';
import { configWith, waitFor } from '../helpers/engine.ts';
import { RealtimeClient, type ServerEvent } from './serverClient.ts';

const TALKER_SEQS = 2;
const READER_TOKENS = 300;
/**
 * The stalled reader's answer: it must still be making audio when its request is paused and when the stall timeout
 * ends it (an answer made whole first sat in the socket's buffers, and nothing was left to pause or cancel).
 * Cancelled at the stall, it costs no more than a short one.
 */
const STALLED_TOKENS = 2000;
/** The Talker's engine lines in the config file (the Thinker's and Code2Wav's max_num_seqs lines carry comments). */
const TALKER_ENGINE = 'max_num_seqs: 16\n      max_num_batched_tokens: 600 # the Talker';

/** What the server did with one request: when (performance.now()) it was paused, and first resumed or ended. */
interface Watched {
  readonly requestId: string;
  readonly paused: Promise<void>;
  readonly cancelled: Promise<string | undefined>;
  releasedAtMs: number | null;
}

/** The engine as the server sees it, with every handle's pause, resume, cancel and end recorded. */
function watchedEngine(engine: Orchestrator, watched: Map<string, Watched>): Engine {
  const watch = (inner: RequestHandle): RequestHandle => {
    let onPause!: () => void;
    let onCancel!: (reason: string | undefined) => void;
    const w: Watched = {
      requestId: inner.requestId,
      paused: new Promise((resolve) => (onPause = resolve)),
      cancelled: new Promise((resolve) => (onCancel = resolve)),
      releasedAtMs: null,
    };
    const released = (): void => void (w.releasedAtMs ??= performance.now());
    watched.set(inner.requestId, w);
    return {
      requestId: inner.requestId,
      prompt: inner.prompt,
      // One subscriber to the engine's hot stream, as without the watch (the server's).
      events: inner.events.pipe(tap((e) => e.type === 'done' && released())),
      cancel: (reason?: string) => {
        released();
        onCancel(reason);
        inner.cancel(reason);
      },
      pause: () => {
        onPause();
        inner.pause();
      },
      resume: () => {
        released();
        inner.resume();
      },
    };
  };
  return new Proxy(engine, {
    get(target, prop) {
      if (prop === 'generate') return (req: Parameters<Engine['generate']>[0]) => watch(target.generate(req));
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

let engine: Orchestrator;
const watched = new Map<string, Watched>();
const apps: FastifyInstance[] = [];

const socketDir = mkdtempSync(path.join(tmpdir(), 'chorus-paused-'));

/** A server on a Unix socket of its own (see the file's comment); its Realtime URL for ws. */
async function serve(options: ServerOptions): Promise<string> {
  const app = buildServer(watchedEngine(engine, watched), { apiKey: null, ...options });
  apps.push(app);
  const socket = path.join(socketDir, `server-${apps.length}.sock`);
  await app.listen({ path: socket });
  return `ws+unix://${socket}:/v1/realtime`;
}

beforeAll(async () => {
  engine = await Orchestrator.start(
    configWith('tiny-omni-text-in.yaml', { [TALKER_ENGINE]: TALKER_ENGINE.replace('16', String(TALKER_SEQS)) }),
  );
  expect(engine.graph.stages.find((s) => s.stageId === 'talker')!.engine.maxNumSeqs).toBe(TALKER_SEQS);
}, 180_000);

afterAll(async () => {
  for (const app of apps) await app.close();
  await engine?.close();
  rmSync(socketDir, { recursive: true, force: true });
});

/** Asks for a spoken answer of `tokens` text tokens; returns its response id (from response.created). */
async function ask(c: RealtimeClient, tokens: number): Promise<string> {
  c.send({
    type: 'conversation.item.create',
    item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Tell me about the sea' }] },
  });
  c.send({ type: 'response.create', response: { output_modalities: ['audio'], max_output_tokens: tokens } });
  const created = await c.next('response.created', () => true, 60_000);
  return (created.response as { id: string }).id;
}

/** A reader that stops reading mid-answer; resolves once the server has paused its request. */
async function pausedReader(wsUrl: string, tokens = READER_TOKENS): Promise<{ client: RealtimeClient; w: Watched }> {
  const client = await RealtimeClient.connect(wsUrl);
  const id = await ask(client, tokens);
  client.ws.pause();
  await waitFor('the request to reach the engine', () => watched.has(id));
  const w = watched.get(id)!;
  await w.paused;
  return { client, w };
}

const talkerInFlight = (): number => engine.health().find((h) => h.stageId === 'talker')!.inFlight;

type Done = { status: string; status_details: { error?: { type: string; code: string; message: string } } | null };

describe('paused readers', () => {
  it('hold no Talker slot: another client gets its first audio while they hold every one', async () => {
    // The stall timeout is off here: only the test releases the readers.
    const wsUrl = await serve({
      maxStreamBufferBytes: 64 * 1024,
      socketHighWaterBytes: 16 * 1024,
      clientStallTimeoutMs: 0,
    });
    const readers = await Promise.all(Array.from({ length: TALKER_SEQS }, () => pausedReader(wsUrl)));
    expect(talkerInFlight()).toBeGreaterThanOrEqual(TALKER_SEQS);

    const other = await RealtimeClient.connect(wsUrl);
    await ask(other, 8);
    await other.next('response.output_audio.delta', () => true, 120_000);
    const firstAudioAtMs = other.arrivals[other.events.findIndex((e) => e.type === 'response.output_audio.delta')];
    // Before the fix the Talker ran nothing until the readers' requests hit the chunk timeout and were released.
    for (const { w } of readers) expect(w.releasedAtMs === null || w.releasedAtMs > firstAudioAtMs).toBe(true);
    expect(talkerInFlight()).toBeGreaterThanOrEqual(TALKER_SEQS); // the readers' requests are still held
    const otherDone = (await other.next('response.done', () => true, 120_000)).response as Done;
    expect(otherDone.status, JSON.stringify(otherDone.status_details)).not.toBe('failed');
    other.close();

    // Read again: each request gets a slot back and runs to its end (the answer's cap), every sample delivered.
    for (const { client } of readers) client.ws.resume();
    for (const { client, w } of readers) {
      const done = (await client.next('response.done', () => true, 240_000)).response as Done;
      expect(done.status, JSON.stringify(done.status_details)).toBe('incomplete'); // max_output_tokens reached
      expect(w.releasedAtMs).not.toBeNull();
      client.close();
    }
  }, 400_000);

  it('past the client-stall timeout: CHORUS_ERR_CLIENT_TOO_SLOW, and every stage lets the request go', async () => {
    const wsUrl = await serve({
      maxStreamBufferBytes: 64 * 1024,
      socketHighWaterBytes: 16 * 1024,
      clientStallTimeoutMs: 1000,
    });
    await waitFor('earlier requests to leave every stage', () => engine.health().every((h) => h.inFlight === 0));
    const { client, w } = await pausedReader(wsUrl, STALLED_TOKENS);
    // Ended by the server while the client still reads nothing, and freed in the Thinker, Talker and Code2Wav.
    expect(await w.cancelled).toMatch(/^the client read too slowly/);
    await waitFor('every stage to free the request', () => engine.health().every((h) => h.inFlight === 0));

    client.ws.resume();
    const done = (await client.next('response.done', () => true, 60_000)).response as Done;
    expect(done.status).toBe('failed');
    expect(done.status_details?.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'CHORUS_ERR_CLIENT_TOO_SLOW',
    });
    expect(done.status_details?.error?.message).toMatch(/stayed full for 1 s.*at least as fast as it plays/);
    expect(client.events.some((e: ServerEvent) => e.type === 'error')).toBe(false);
    client.close();
  }, 240_000);
});
