/**
 * A real pipeline behind the server over TLS, and Realtime sessions through the official openai SDK client (which
 * always dials wss://): the setup the voice and truncate tests share.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll } from 'vitest';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { buildServer } from '../../src/server/app.ts';
import { selfSignedCert } from './tls.ts';

export interface TlsPipeline {
  readonly baseURL: string;
  readonly ca: Buffer;
  close(): Promise<void>;
}

/** The pipeline of configs/<config> over TLS for the test file it is called in (started before its tests). */
export function tlsPipelineForFile(config: string): () => TlsPipeline {
  let pipeline: TlsPipeline | undefined;
  beforeAll(async () => {
    pipeline = await startTlsPipeline(config);
  }, 120_000);
  afterAll(async () => {
    await pipeline?.close();
  });
  return () => pipeline!;
}

/**
 * Starts configs/<config> (or the config at an absolute path) and its server on https://127.0.0.1 (a free port), with
 * a fresh self-signed cert.
 */
export async function startTlsPipeline(config: string): Promise<TlsPipeline> {
  const file = isAbsolute(config) ? config : join(import.meta.dirname, '..', '..', 'configs', config);
  const engine = await Orchestrator.start(await loadConfig(file));
  const dir = mkdtempSync(join(tmpdir(), 'chorus-tls-'));
  const tls = selfSignedCert(dir);
  const app = buildServer(engine, { apiKey: null, tls: { cert: tls.cert, key: tls.key } });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    baseURL: `${address}/v1`,
    ca: tls.cert,
    async close() {
      await app.close();
      await engine.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type Event = { type: string } & Record<string, unknown>;

export interface SdkSession {
  readonly rt: OpenAIRealtimeWS;
  /** Every server event, in order, and when each arrived (performance.now()). */
  readonly events: Event[];
  readonly arrivedAt: Map<Event, number>;
  /** The first event from index `from` on (seen already or still to come) that matches. */
  next(match: (e: Event) => boolean, from?: number): Promise<Event>;
}

/** An open Realtime session through the SDK, recording every server event. */
export async function sdkSession(pipeline: TlsPipeline): Promise<SdkSession> {
  const rt = new OpenAIRealtimeWS(
    { model: 'chorus', options: { ca: pipeline.ca } },
    new OpenAI({ baseURL: pipeline.baseURL, apiKey: 'none' }),
  );
  const events: Event[] = [];
  const arrivedAt = new Map<Event, number>();
  const waiters: { match: (e: Event) => boolean; resolve: (e: Event) => void }[] = [];
  rt.on('error', () => {}); // error events are asserted from the 'event' stream; the SDK re-emits them here
  rt.on('event', (raw) => {
    const e = raw as unknown as Event;
    arrivedAt.set(e, performance.now());
    events.push(e);
    for (const w of [...waiters])
      if (w.match(e)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(e);
      }
  });
  const next = (match: (e: Event) => boolean, from = 0): Promise<Event> => {
    const seen = events.slice(from).find(match);
    return seen ? Promise.resolve(seen) : new Promise((resolve) => waiters.push({ match, resolve }));
  };
  await new Promise<void>((resolve) => rt.socket.once('open', () => resolve()));
  return { rt, events, arrivedAt, next };
}

export const ofType = (type: string) => (e: Event) => e.type === type;
