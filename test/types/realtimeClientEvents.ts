/**
 * Compile-time only (checked by `npx tsc --noEmit`; vitest does not collect it): every Realtime client event the
 * openai SDK can send over a WebSocket is one Chorus handles, so an SDK upgrade that adds an event fails here by name
 * instead of reaching a client as "event type ... is not supported".
 */
import type { RealtimeClientEvent } from 'openai/resources/realtime/realtime';
import type { ClientEventType } from '../../src/server/realtime/clientEvents.ts';

/** WebRTC and SIP only: a WebSocket client has no server-side output buffer to clear. */
type NotOverWebSocket = 'output_audio_buffer.clear';

type Unhandled = Exclude<RealtimeClientEvent['type'], ClientEventType | NotOverWebSocket>;

/** `true` while Chorus handles them all; otherwise a compile error naming the events it does not. */
export const everyClientEventHandled: [Unhandled] extends [never] ? true : Unhandled = true;
