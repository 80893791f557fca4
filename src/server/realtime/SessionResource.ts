/**
 * The session resource of the Realtime server events (session.created, session.updated, session.resumed): the
 * session's settings in effect, OpenAI Realtime GA fields with the Chorus extensions marked.
 */
import type { RealtimeTool, RealtimeToolChoice } from './realtimeTools.ts';
import type { GenerationFields } from '../generationParams.ts';
import type { TruncationSetting } from './planTruncation.ts';
import type { TracingSetting } from './sessionTracing.ts';

/** The only audio format Chorus speaks, both ways: pcm16 mono at 24 kHz. */
export interface AudioFormat {
  readonly type: 'audio/pcm';
  readonly rate: 24000;
}

export type SessionResource = {
  readonly type: 'realtime';
  readonly object: 'realtime.session';
  readonly id: string;
  readonly model: string;
  readonly output_modalities: readonly ('text' | 'audio')[];
  readonly instructions: string;
  readonly max_output_tokens: number | 'inf';
  readonly audio: {
    readonly input: {
      readonly format: AudioFormat;
      readonly turn_detection: TurnDetectionResource | null;
      /** Left out while off (the SDK types it optional, not nullable). */
      readonly transcription?: TranscriptionResource;
    };
    readonly output: { readonly format: AudioFormat; readonly voice: string | { readonly id: string } };
  };
  readonly truncation: TruncationSetting;
  /** session.tracing as set (sessionTracing.ts); chorus_tracing (extension): whether the server records it. */
  readonly tracing: TracingSetting;
  readonly chorus_tracing: string;
  readonly tools: readonly RealtimeTool[];
  readonly tool_choice: RealtimeToolChoice;
} & GenerationFields; // Chorus extensions in effect, echoed

/** Input audio transcription in effect (transcriptionSetting.ts): the model named as the client named it. */
export interface TranscriptionResource {
  readonly model: string;
  readonly language?: string;
  readonly prompt?: string;
  /** Chorus extension: what transcribes the audio, whatever model the client named (OpenAI's names map onto it). */
  readonly chorus_transcriber: string;
}

/** Turn detection in effect: server_vad (Silero's silence rule) or semantic_vad (an end-of-turn model). */
export type TurnDetectionResource = ServerVadResource | SemanticVadResource;

export type Eagerness = 'low' | 'medium' | 'high' | 'auto';

/** semantic_vad with every parameter in effect (OpenAI's fields), and how Chorus decides a turn's end. */
export interface SemanticVadResource {
  readonly type: 'semantic_vad';
  readonly eagerness: Eagerness;
  readonly create_response: boolean;
  readonly interrupt_response: boolean;
  /** Chorus extension: the model and thresholds eagerness maps onto, or the silence rule it fell back to. */
  readonly chorus_end_of_turn: EndOfTurnResource;
}

export type EndOfTurnResource =
  | {
      readonly model: 'smart-turn-v3';
      /** The turn ends when the model's P(complete) reaches this, after probe_silence_ms of silence... */
      readonly threshold: number;
      readonly probe_silence_ms: number;
      /** ...or, whatever it says, after this much silence. */
      readonly max_silence_ms: number;
    }
  | {
      readonly model: null;
      /** No end-of-turn model (YAML realtime.semantic_vad.fallback: silence): server_vad's rule. */
      readonly silence_duration_ms: number;
      readonly reason: string;
    };

/** server_vad with every parameter in effect. */
export interface ServerVadResource {
  readonly type: 'server_vad';
  readonly threshold: number;
  readonly prefix_padding_ms: number;
  readonly silence_duration_ms: number;
  readonly create_response: boolean;
  readonly interrupt_response: boolean;
  readonly idle_timeout_ms: number | null;
}
