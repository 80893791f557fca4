/**
 * Server-side first-packet times in main's process, from the diagnostics channels the engine and the front
 * end publish (zero cost when nobody subscribes). Joined with client traces by request id they split a TTFP
 * into engine time (generate() to the first audio event in main), front-end time (request frame in to audio
 * handed to the socket) and the rest (loopback, client parsing): where the time goes without a profiler.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { channelNames } from '../../src/basics.ts';

export interface ServerSideTiming {
  /** generate() -> first audio / text event in main (engine clock: Date.now(), so whole milliseconds). */
  engineTtfpMs?: number;
  engineTtftMs?: number;
  /** Request frame or body received -> first audio handed to the socket (performance.now()). */
  serverTtfpMs?: number;
  serverTtftMs?: number;
}

const CHANNELS = {
  end: channelNames.requestEnd,
  wsAudio: channelNames.wsFirstAudio,
  wsText: channelNames.wsFirstText,
  httpAudio: channelNames.httpFirstAudio,
  httpText: channelNames.httpFirstText,
} as const;

interface EndMessage {
  readonly requestId: string;
  readonly startedAtMs: number;
  readonly firstTextAtMs: number | null;
  readonly firstAudioAtMs: number | null;
}

/** The server-side times of a request by its id (ServerTimings, or what a server process sent: serverProcess.ts). */
export interface ServerTimingLookup {
  get(requestId: string | undefined): ServerSideTiming | undefined;
}

export class ServerTimings implements ServerTimingLookup {
  readonly #byRequest = new Map<string, ServerSideTiming>();
  readonly #handlers: [string, (message: unknown) => void][];

  constructor() {
    const entry = (id: string): ServerSideTiming => {
      let t = this.#byRequest.get(id);
      if (!t) this.#byRequest.set(id, (t = {}));
      return t;
    };
    this.#handlers = [
      [
        CHANNELS.end,
        (m) => {
          const e = m as EndMessage;
          const t = entry(e.requestId);
          if (e.firstAudioAtMs !== null) t.engineTtfpMs = e.firstAudioAtMs - e.startedAtMs;
          if (e.firstTextAtMs !== null) t.engineTtftMs = e.firstTextAtMs - e.startedAtMs;
        },
      ],
      ...[CHANNELS.wsAudio, CHANNELS.httpAudio].map((name): [string, (m: unknown) => void] => [
        name,
        (m) => {
          const e = m as { requestId: string; ttfpMs: number };
          entry(e.requestId).serverTtfpMs = e.ttfpMs;
        },
      ]),
      ...[CHANNELS.wsText, CHANNELS.httpText].map((name): [string, (m: unknown) => void] => [
        name,
        (m) => {
          const e = m as { requestId: string; ttftMs: number };
          entry(e.requestId).serverTtftMs = e.ttftMs;
        },
      ]),
    ];
    for (const [name, handler] of this.#handlers) subscribe(name, handler);
  }

  get(requestId: string | undefined): ServerSideTiming | undefined {
    return requestId === undefined ? undefined : this.#byRequest.get(requestId);
  }

  /** Forgets every request's times (a block's, once collected). */
  clear(): void {
    this.#byRequest.clear();
  }

  close(): void {
    for (const [name, handler] of this.#handlers) unsubscribe(name, handler);
    this.#byRequest.clear();
  }
}
