/**
 * V8 flags of the process that runs main (the Orchestrator), set when it starts. `--heap-growing-percent=300`: the
 * old generation may grow to 4x what the last mark-compact kept, as the stages' may (STAGE_NODE_FLAGS in
 * src/worker/StageWorker.ts). V8 chose ~1.4x for main's ~30 MB: serving c=10 it ran a mark-compact every 0.6-0.7 s,
 * each with its marking on four helper threads at nice 0, on the cores the stages (nice 8) compute a first packet on,
 * and the same at c=1 wherever main hosted a second server or the bench's client (a first packet's Talker prefill 26
 * ms off its core; bench/NOTES.md, "Main's collections in the stages' first packets"). Main's heap is small, so 4x
 * costs tens of MB. Set from inside (main is whatever process embeds the engine: `chorus serve`, the bench, a test).
 */
import { setFlagsFromString } from 'node:v8';
import { HEAP_GROWING_FLAG } from '../worker/StageWorker.ts';

export const MAIN_V8_FLAGS: readonly string[] = [HEAP_GROWING_FLAG];

/** Sets MAIN_V8_FLAGS in this process (again: no change). */
export function setMainV8Flags(): void {
  for (const flag of MAIN_V8_FLAGS) setFlagsFromString(flag);
}
