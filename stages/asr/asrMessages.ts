/**
 * The messages between the server and its speech-to-text process (asrProcess.ts), over the IPC pipe with advanced
 * serialization (typed arrays travel as they are). One transcription per id; `cancel` drops it if not yet started.
 */
export interface AsrProcessArgs {
  /** A CTranslate2 Whisper folder (locateWhisper.ts). */
  readonly modelDir: string;
  readonly threads: number;
}

export type ToAsr =
  | {
      readonly type: 'transcribe';
      readonly id: number;
      /** The audio as the client sent it: pcm16 (at `sampleRateHz`) or a WAV file. */
      readonly bytes: Uint8Array;
      readonly format: 'pcm16' | 'wav';
      readonly sampleRateHz: number;
      readonly prompt: string | null;
    }
  | { readonly type: 'cancel'; readonly id: number };

export type FromAsr =
  | { readonly type: 'ready'; readonly loadMs: number }
  | { readonly type: 'delta'; readonly id: number; readonly text: string }
  | {
      readonly type: 'done';
      readonly id: number;
      readonly text: string;
      readonly audioSeconds: number;
      readonly computeMs: number;
    }
  | { readonly type: 'failed'; readonly id: number; readonly code: string; readonly message: string }
  | { readonly type: 'load_failed'; readonly code: string; readonly message: string };
