/**
 * How long this process spent building models (stages/models/modelCache.ts, on first use): one-off work that a
 * restart, finding them built, does not repeat. A stage reports it in READY; main leaves it out of the restart
 * estimate (/health readyInMs).
 */
let builtMs = 0;

export function noteModelBuild(ms: number): void {
  builtMs += ms;
}

export function modelBuildMsHere(): number {
  return builtMs;
}
