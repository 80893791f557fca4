/**
 * The server's speech-to-text: a child process running Whisper (stages/asr/asrProcess.ts) for every session and
 * /v1/audio/transcriptions, started with the server so the first transcript does not pay the model's load. A
 * process, not a worker thread: a worker terminated inside onnxruntime's run aborts the whole server
 * (NODE-NOTES), and a child can be killed at any point. If it dies, what it had in hand fails
 * (CHORUS_ERR_TRANSCRIPTION_FAILED) and the next transcription starts a new one.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { FastifyBaseLogger } from 'fastify';
import { ChorusError, ErrorCodes, type ErrorCode } from '../../common/errors.ts';
import { loaderFlagsFor, moduleFile } from '../../common/moduleFile.ts';
import type { AsrSpec } from '../../common/realtimeSettings.ts';
import { locateWhisper } from '../../../stages/asr/locateWhisper.ts';
import type { AsrProcessArgs, FromAsr, ToAsr } from '../../../stages/asr/asrMessages.ts';
import type { MediaPart } from '../media/mediaParts.ts';
import type { TranscriptionSetting } from '../realtime/transcriptionSetting.ts';
import type { Transcriber } from './Transcriber.ts';

const ENTRY = fileURLToPath(moduleFile('../../../stages/asr/asrProcess', import.meta.url));

interface Pending {
  readonly onDelta: (text: string) => void;
  readonly resolve: (text: string) => void;
  readonly reject: (err: ChorusError) => void;
}

export class AsrTranscriber implements Transcriber {
  /** Seconds of audio transcribed and the process's milliseconds on them (their ratio: the real-time factor). */
  audioSeconds = 0;
  computeMs = 0;
  #child: ChildProcess | null = null;
  #ready: Promise<void> | null = null;
  #nextId = 0;
  readonly #pending = new Map<number, Pending>();
  #closed = false;

  /** `nice`: the process's CPU priority (sharedTranscriber); null: the server's. */
  constructor(
    private readonly spec: AsrSpec,
    private readonly log: FastifyBaseLogger,
    private readonly nice: number | null = null,
  ) {}

  /** Whisper, from the YAML's asr: model (a folder, or a Python package's). */
  get name(): string {
    const m = this.spec.model;
    return `whisper (the YAML's asr: ${'path' in m ? m.path : `${m.pythonPackage}/${m.dir}`})`;
  }

  /** Starts the process and resolves when its model is loaded (rejects with the load's error). */
  start(): Promise<void> {
    if (this.#ready) return this.#ready;
    const modelDir = locateWhisper(this.spec.model);
    const args: AsrProcessArgs = { modelDir, threads: this.spec.threads };
    const child = fork(ENTRY, [JSON.stringify(args)], {
      execArgv: loaderFlagsFor(ENTRY),
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.#child = child;
    // Before the model loads: its threads, started by the process's main thread, inherit the priority.
    if (this.nice !== null && child.pid !== undefined) {
      try {
        setPriority(child.pid, this.nice);
      } catch (err) {
        this.log.warn({ err }, "speech-to-text: could not lower its CPU priority; it runs at the server's");
      }
    }
    this.#ready = new Promise<void>((resolve, reject) => {
      child.on('message', (m: FromAsr) => {
        if (m.type === 'ready') {
          this.log.info({ modelDir, loadMs: Math.round(m.loadMs) }, 'speech-to-text ready');
          resolve();
        } else if (m.type === 'load_failed') reject(new ChorusError(m.code as ErrorCode, m.message));
        else this.#onMessage(m);
      });
      child.on('exit', (code, signal) => {
        reject(new ChorusError(ErrorCodes.MODEL_LOAD, `the speech-to-text process exited (${signal ?? code})`));
        this.#lost(child, `the speech-to-text process exited (${signal ?? code})`);
      });
    });
    this.#ready.catch(() => undefined); // reported to whoever awaits it; an unawaited start must not crash
    return this.#ready;
  }

  async transcribe(
    audio: MediaPart,
    setting: TranscriptionSetting,
    signal: AbortSignal,
    onDelta: (text: string) => void,
  ): Promise<string> {
    if (audio.type !== 'audio') throw new ChorusError(ErrorCodes.MEDIA_INVALID, 'only audio can be transcribed');
    if (setting.language !== null && setting.language !== 'en')
      throw new ChorusError(
        ErrorCodes.PARAM_UNSUPPORTED,
        `language "${setting.language}": this pipeline's speech-to-text (Whisper tiny.en) hears English only; ` +
          'send "en" or leave language out',
      );
    if (this.#closed) throw new ChorusError(ErrorCodes.SHUTTING_DOWN, 'the server is shutting down');
    await this.start();
    const child = this.#child!;
    const id = this.#nextId++;
    const message: ToAsr = {
      type: 'transcribe',
      id,
      bytes: audio.data,
      format: audio.format === 'wav' ? 'wav' : 'pcm16',
      sampleRateHz: audio.sampleRateHz ?? 24000,
      prompt: setting.prompt,
    };
    return new Promise<string>((resolve, reject) => {
      const cancel = () => {
        this.#pending.delete(id);
        child.send({ type: 'cancel', id } satisfies ToAsr);
        reject(new ChorusError(ErrorCodes.REQUEST_CANCELLED, 'the transcription was cancelled'));
      };
      if (signal.aborted) return cancel();
      signal.addEventListener('abort', cancel, { once: true });
      const settle = () => signal.removeEventListener('abort', cancel);
      this.#pending.set(id, {
        onDelta,
        resolve: (text) => (settle(), resolve(text)),
        reject: (err) => (settle(), reject(err)),
      });
      child.send(message);
    });
  }

  #onMessage(m: Exclude<FromAsr, { type: 'ready' | 'load_failed' }>): void {
    const pending = this.#pending.get(m.id);
    if (!pending) return; // cancelled while it ran
    if (m.type === 'delta') return pending.onDelta(m.text);
    this.#pending.delete(m.id);
    if (m.type === 'done') {
      this.audioSeconds += m.audioSeconds;
      this.computeMs += m.computeMs;
      pending.resolve(m.text);
    } else pending.reject(new ChorusError(ErrorCodes.TRANSCRIPTION_FAILED, m.message));
  }

  #lost(child: ChildProcess, why: string): void {
    if (this.#child !== child) return;
    this.#child = null;
    this.#ready = null;
    for (const p of this.#pending.values()) p.reject(new ChorusError(ErrorCodes.TRANSCRIPTION_FAILED, why));
    this.#pending.clear();
    if (!this.#closed) this.log.warn(why);
  }

  /** Stops the process; what was in hand fails. */
  close(): void {
    this.#closed = true;
    const child = this.#child;
    if (child) {
      this.#lost(child, 'the server is shutting down');
      child.kill('SIGKILL');
    }
  }
}
