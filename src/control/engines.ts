/**
 * The control-plane engines, by the connector kind whose server they share (transport/kinds.ts): instances join a
 * deployment over the plane of the first connector of theirs that has one. One line per engine.
 */
import type { ControlEngine } from './ControlLink.ts';
import { redisControl } from './redis/RedisControl.ts';

export const CONTROL_ENGINES: Readonly<Record<string, ControlEngine>> = { redis: redisControl };

/** The engine of connector kind `kind` (own keys only: "constructor" is no engine). */
export function controlEngineOf(kind: string): ControlEngine | undefined {
  return Object.hasOwn(CONTROL_ENGINES, kind) ? CONTROL_ENGINES[kind] : undefined;
}
