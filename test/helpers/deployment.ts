/**
 * A multi-host deployment on one machine, as users run it: `chorus serve` (host A) and `chorus stage` processes
 * (host B), real processes against a real Redis. A stage can run in its own IPC and mount namespace with a private
 * /dev/shm, so nothing can pass through this machine's shared memory. Everything started is killed when the test
 * ends, whatever happened.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { expect, vi } from 'vitest';
import { CHORUS_BIN, killOnFinish, type SharedProcesses } from './processes.ts';

export interface Started {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  output(): string;
}

/**
 * detached: a process group of its own (a service's, a terminal job's), for signals sent to the whole group. shared:
 * killed after the describe block (sharedProcesses) instead of after the test that started it.
 */
function start(
  args: string[],
  env: Record<string, string>,
  opts: { isolated?: boolean; detached?: boolean; shared?: SharedProcesses },
): Started {
  const { isolated = false, detached = false } = opts;
  const cmd = isolated
    ? // A private /dev/shm: a fresh tmpfs in a new mount namespace, and a new IPC namespace. --kill-child makes the
      // kernel SIGKILL the stage when unshare dies (killOnFinish kills unshare), so nothing outlives the test.
      [
        'unshare',
        '--ipc',
        '--mount',
        '--fork',
        '--kill-child=SIGKILL',
        'sh',
        '-c',
        'mount -t tmpfs -o size=64m tmpfs /dev/shm && exec "$0" "$@"',
        process.execPath,
        CHORUS_BIN,
        ...args,
      ]
    : [process.execPath, CHORUS_BIN, ...args];
  const child = spawn(cmd[0], cmd.slice(1), {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, CHORUS_LOG_LEVEL: 'warn', ...env },
    detached,
  });
  killOnFinish(child, opts.shared);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => out };
}

export interface Serve extends Started {
  readonly url: string;
  /** From its spawn to its URL: main's start and its local stages' boots, under this run's load. */
  readonly startMs: number;
}

/** `chorus serve --config FILE --port 0`, resolved once it prints its URL (detached: in a process group of its own). */
export async function startServe(
  config: string,
  env: Record<string, string>,
  opts: { detached?: boolean; shared?: SharedProcesses } = {},
): Promise<Serve> {
  const startedAt = Date.now();
  const s = start(['serve', '--config', config, '--port', '0'], env, opts);
  const url = await new Promise<string>((resolve, reject) => {
    s.child.stdout!.on('data', () => {
      const m = /serving (http:\/\/127\.0\.0\.1:\d+)/.exec(s.output());
      if (m) resolve(m[1]);
    });
    void s.exited.then((code) => reject(new Error(`serve exited early with ${code}: ${s.output()}`)));
  });
  return { ...s, url, startMs: Date.now() - startedAt };
}

/** `chorus stage --config FILE --stage ID --name NAME`; isolated: in its own IPC + mount namespace. */
export function startStage(
  config: string,
  stageId: string,
  name: string,
  env: Record<string, string>,
  opts: { isolated?: boolean; extraArgs?: string[]; shared?: SharedProcesses } = {},
): Started {
  return start(['stage', '--config', config, '--stage', stageId, '--name', name, ...(opts.extraArgs ?? [])], env, opts);
}

export interface HealthStage {
  readonly stage_id: string;
  readonly status: string;
  readonly pid: number | null;
  readonly in_flight: number;
  readonly instance?: string;
  readonly host?: string;
  readonly placement?: string;
  readonly last_heartbeat?: string;
}

export async function health(url: string): Promise<{ httpStatus: number; ready: boolean; stages: HealthStage[] }> {
  const res = await fetch(`${url}/health`);
  const body = (await res.json()) as { ready: boolean; stages: HealthStage[] };
  return { httpStatus: res.status, ready: body.ready, stages: body.stages };
}

/**
 * Waits until /health lists `instances` ready instances (remote ones join as they come up). By default for as long as
 * twice the serve's own start, at least a minute: a stage that joins is a process that loads and warms its model up,
 * as each of the serve's stages did, and took as long as the whole serve's start at load 26 (94 s each), past the
 * fixed minute this wait once had.
 */
export async function readyInstances(serve: Serve, instances: number, timeoutMs = joinBoundMs(serve)): Promise<void> {
  // vi.waitFor, not expect.poll: a describe block's shared deployment waits here in its beforeAll, outside any test.
  await vi.waitFor(
    async () => expect((await health(serve.url)).stages.filter((s) => s.status === 'ready').length).toBe(instances),
    { timeout: timeoutMs, interval: 100 },
  );
}

/** How long stages started after the serve may take to join it, from what its start took. */
function joinBoundMs(serve: Serve): number {
  return Math.max(60_000, 2 * serve.startMs);
}

export interface ChatAnswer {
  readonly status: number;
  readonly text: string;
  readonly pcm16: Int16Array;
  readonly error: { code: string; message: string } | null;
  readonly endedAtMs: number;
  /** chorus_warnings of the stream (e.g. a media item dropped under on_encoder_failure: text_only). */
  readonly warnings: readonly string[];
  /** When the first text arrived (null: none). */
  readonly firstTextAtMs: number | null;
}

/** A streamed chat completion with audio (pcm16), read to the end; errors in the stream are returned, not thrown. */
export async function chat(
  url: string,
  content: string,
  extra: Record<string, unknown> = {},
  onFirstChunk?: () => void,
  onFirstAudio?: () => void,
): Promise<ChatAnswer> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      messages: [{ role: 'user', content }],
      modalities: ['text', 'audio'],
      audio: { voice: 'alloy', format: 'pcm16' },
      stream: true,
      ...extra,
    }),
  });
  if (res.status !== 200) {
    const body = (await res.json()) as { error: { code: string; message: string } };
    return {
      status: res.status,
      text: '',
      pcm16: new Int16Array(0),
      error: body.error,
      endedAtMs: Date.now(),
      warnings: [],
      firstTextAtMs: null,
    };
  }
  let text = '';
  const audio: Buffer[] = [];
  let error: ChatAnswer['error'] = null;
  const warnings: string[] = [];
  let firstTextAtMs: number | null = null;
  let buffered = '';
  let first = true;
  const decoder = new TextDecoder();
  for await (const part of res.body!) {
    buffered += decoder.decode(part as Uint8Array, { stream: true });
    let nl: number;
    while ((nl = buffered.indexOf('\n\n')) >= 0) {
      const event = buffered.slice(0, nl).replace(/^data: /, '');
      buffered = buffered.slice(nl + 2);
      if (event === '[DONE]' || event.length === 0) continue;
      const json = JSON.parse(event) as {
        error?: { code: string; message: string };
        chorus_warnings?: string[];
        choices?: { delta: { content?: string; audio?: { data?: string; transcript?: string } } }[];
      };
      if (first) {
        first = false;
        onFirstChunk?.();
      }
      if (json.error) error = json.error;
      if (json.chorus_warnings) warnings.push(...json.chorus_warnings);
      const delta = json.choices?.[0]?.delta;
      if (delta?.content) {
        text += delta.content;
        firstTextAtMs ??= Date.now();
      }
      if (delta?.audio?.transcript) text += delta.audio.transcript;
      if (delta?.audio?.data) {
        if (audio.length === 0) onFirstAudio?.();
        audio.push(Buffer.from(delta.audio.data, 'base64'));
      }
    }
  }
  const bytes = Buffer.concat(audio);
  const pcm16 = new Int16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2);
  return { status: 200, text, pcm16: Int16Array.from(pcm16), error, endedAtMs: Date.now(), warnings, firstTextAtMs };
}

/** Largest per-sample difference of two pcm16 streams (lengths must match). */
export function maxDiff(a: Int16Array, b: Int16Array): number {
  if (a.length !== b.length) return Number.POSITIVE_INFINITY;
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i] - b[i]));
  return max;
}
