/**
 * Test helpers for the server: boot it on port 0 over a TestEngine (a real pipeline: test/helpers/servePipeline.ts), a
 * realtime client that records every server event and lets a test wait for the next one that matches, and a strict
 * /metrics parser.
 */
import { expect } from 'vitest';
import { WebSocket, type ClientOptions } from 'ws';
import { buildServer, type ServerOptions } from '../../src/server/app.ts';
import { listen } from '../helpers/servePipeline.ts';
import { TestEngine, type TestEngineOptions } from './serverTestEngine.ts';

export type ServerEvent = { type: string; [key: string]: unknown };

export async function startTestServer(opts: ServerOptions = {}, engineOpts: TestEngineOptions = {}) {
  const engine = new TestEngine(engineOpts);
  return { engine, ...(await listen(buildServer(engine, { apiKey: null, ...opts }))) };
}

export class RealtimeClient {
  readonly ws: WebSocket;
  readonly events: ServerEvent[] = [];
  /** Arrival time (performance.now()) of each event, same index as events. */
  readonly arrivals: number[] = [];
  #cursor = 0;
  #waiters: (() => void)[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on('message', (data) => {
      this.events.push(JSON.parse(data.toString()) as ServerEvent);
      this.arrivals.push(performance.now());
      for (const w of this.#waiters.splice(0)) w();
    });
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => {
        for (const w of this.#waiters.splice(0)) w();
        resolve({ code, reason: reason.toString() });
      }),
    );
  }

  static async connect(url: string, protocols?: string | string[], options?: ClientOptions): Promise<RealtimeClient> {
    const ws = new WebSocket(url, protocols, options);
    const client = new RealtimeClient(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    await client.next('session.created');
    return client;
  }

  send(event: object): void {
    this.ws.send(JSON.stringify(event));
  }

  /** The next event (after the previous next() result) matching type/predicate; fails after timeoutMs. */
  async next(
    type: string,
    predicate: (e: ServerEvent) => boolean = () => true,
    timeoutMs = 5000,
  ): Promise<ServerEvent> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      while (this.#cursor < this.events.length) {
        const e = this.events[this.#cursor++];
        if (e.type === type && predicate(e)) return e;
      }
      if (this.ws.readyState === WebSocket.CLOSED) throw new Error(`socket closed while waiting for ${type}`);
      const remaining = deadline - performance.now();
      if (remaining <= 0)
        throw new Error(
          `timed out waiting for ${type}; got ${this.events
            .slice(-5)
            .map((e) => e.type)
            .join(', ')}`,
        );
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  ofType(type: string): ServerEvent[] {
    return this.events.filter((e) => e.type === type);
  }

  /** Sends a user message and response.create; returns the response.done event. */
  async respond(text: string, response: object = {}, timeoutMs = 5000): Promise<ServerEvent> {
    this.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
    });
    this.send({ type: 'response.create', response });
    return this.next('response.done', () => true, timeoutMs);
  }

  close(): void {
    this.ws.close();
  }
}

/** Concatenates the base64 pcm16 audio deltas of a response into samples. */
export function decodeAudioDeltas(events: readonly ServerEvent[], responseId?: string): Int16Array {
  const parts = events
    .filter(
      (e) => e.type === 'response.output_audio.delta' && (responseId === undefined || e.response_id === responseId),
    )
    .map((e) => Buffer.from(e.delta as string, 'base64'));
  const bytes = Buffer.concat(parts);
  return new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
}

export interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}
export interface Family {
  type: string;
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/** A strict parser for the text format (0.0.4): HELP/TYPE comments and `name{l="v",...} value` samples. */
export function parsePrometheus(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const family = (name: string): Family => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { type: 'untyped', help: '', samples: [] }));
    return f;
  };
  const baseName = (sample: string): string => {
    for (const suffix of ['_bucket', '_sum', '_count']) {
      const base = sample.slice(0, -suffix.length);
      if (sample.endsWith(suffix) && families.get(base)?.type === 'histogram') return base;
    }
    return sample;
  };
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      expect(meta[2], line).toMatch(NAME);
      if (meta[1] === 'TYPE') {
        expect(['counter', 'gauge', 'histogram', 'summary', 'untyped'], line).toContain(meta[3]);
        family(meta[2]).type = meta[3];
      } else family(meta[2]).help = meta[3];
      continue;
    }
    expect(line.startsWith('#'), `unexpected comment: ${line}`).toBe(false);
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( \d+)?$/.exec(line);
    expect(m, `bad sample line: ${line}`).not.toBeNull();
    const labels: Record<string, string> = {};
    if (m![3]) {
      const labelRe = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/gy;
      let consumed = 0;
      for (let lm = labelRe.exec(m![3]); lm; lm = labelRe.exec(m![3])) {
        labels[lm[1]] = lm[2].replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
        consumed = labelRe.lastIndex;
      }
      expect(consumed, `bad labels: ${line}`).toBe(m![3].length);
    }
    const value = m![4] === '+Inf' ? Infinity : m![4] === '-Inf' ? -Infinity : Number(m![4]);
    expect(Number.isNaN(value) && m![4] !== 'NaN', `bad value: ${line}`).toBe(false);
    family(baseName(m![1])).samples.push({ name: m![1], labels, value });
  }
  return families;
}
