/**
 * What the Realtime session (src/server/realtime) uses of voice: the VAD service and its per-session stream of turn
 * events, and the speech prefill that runs while the user talks. The server imports src/voice through this file only
 * (test/helpers/importGraph.ts enforces it), so the VAD's model, threads and turn rules change behind it.
 */
export {
  VAD_INPUT_RATE_HZ,
  VadService,
  type TurnEvent,
  type TurnParams,
  type VadServiceOptions,
  type VadStream,
} from './VadService.ts';
export { PREFILL_EVERY_MS, PrefillSlots, VoicePrefill } from './VoicePrefill.ts';
