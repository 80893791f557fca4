/**
 * The playground's state as the tests' page functions see it (window.chorusPlayground, set by its main.js). Those
 * functions run in Chromium, serialized by playwright, and this project has no DOM typings, so the page's globals
 * are described here, once for both browser tests. (Strings would be simpler, but the page's CSP, no eval, rightly
 * refuses them.)
 */
export interface PageResponse {
  id: string | null;
  itemId: string | null;
  source: 'text' | 'voice';
  status: string;
  reason: string | null;
  text: string;
  usage: {
    input_tokens: number;
    output_tokens: number;
    output_token_details: { text_tokens: number };
    input_token_details: { image_tokens: number; cached_tokens: number };
  } | null;
  serverLatency: { from: string; ttft_ms: number | null; ttfp_ms: number | null } | null;
  ttftMs: number | null;
  ttfpMs: number | null;
  audioSamples: number;
  underruns: number;
  schedule: { start: number; duration: number; samples: number; first: number }[];
  interrupted: boolean;
  playedMs: number | null;
}

export interface PageTurn {
  role: 'user' | 'assistant';
  kind: 'text' | 'speech' | 'answer';
  itemId: string | null;
  text: string;
  status?: string;
  speechMs?: number | null;
}

export interface PageEvent {
  type: string;
  at: number;
  item_id?: string;
  audio_start_ms?: number;
  audio_end_ms?: number;
  response_id?: string;
  status?: string;
  reason?: string | null;
  item?: { id: string; role: string; content: string[] };
  session?: Record<string, unknown>;
}

export interface PageGlobals {
  document: { querySelector(selector: string): { textContent: string | null } | null };
  chorusPlayground: {
    responses: (PageResponse & { row: unknown; turn: unknown })[];
    events: PageEvent[];
    turns: PageTurn[];
    ws: { send(data: string): void } | null;
    session: { id: string } | null;
    context: { usedPositions: number; maxPositions: number | null; inputTokens: number; cachedTokens: number } | null;
    eventCounts: Record<string, number>;
    truncations: { itemId: string; responseId: string; audioEndMs: number; answered: boolean }[];
    mic: { on: boolean; state: string; level: number; chunksSent: number };
    camera: { on: boolean; framesSent: number; inConversation: string[]; error: string | null };
    sources: { size: number }; // audio buffers scheduled and not yet ended
    audioContext: { state: string; currentTime: number };
    speaking: boolean;
    waterfall: {
      responseId: string;
      status: 'loading' | 'drawn' | 'failed';
      traceId: string | null;
      lanes: string[];
      error: string | null;
    } | null;
  };
}
