/**
 * YAML `realtime.semantic_vad`: where Realtime semantic_vad's end-of-turn model is, and what semantic_vad does where
 * there is none (docs/voice.md#semantic_vad). The model is Smart Turn v3 (BSD-2, ONNX, 8.7 MB), which the pipecat-ai
 * wheel on PyPI carries; no npm package ships it, so it is taken out of that wheel once into the user cache (.ci/run
 * does it; docs/voice.md has the two commands) and found there at run time, with no network.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { SemanticVadSpec } from '../common/realtimeSettings.ts';
import { userCacheDir } from './paths.ts';
import type { Problems } from './problems.ts';

export const SMART_TURN_FILE = 'smart-turn-v3.2-cpu.onnx';

/** Where .ci/run (and docs/voice.md) put Smart Turn v3: smart-turn/ in the user cache. */
export function defaultSmartTurnPath(): string {
  return path.join(userCacheDir(), 'smart-turn', SMART_TURN_FILE);
}

interface SemanticVadYaml {
  readonly model?: string;
  readonly fallback?: 'refuse' | 'silence';
}

/** A model the YAML names must exist (a problem otherwise); the default location may be empty (no model). */
export function resolveSemanticVad(
  yaml: SemanticVadYaml | undefined,
  baseDir: string,
  problems: Problems,
): SemanticVadSpec {
  const fallback = yaml?.fallback ?? 'refuse';
  if (yaml?.model === undefined) {
    const file = defaultSmartTurnPath();
    return { modelPath: existsSync(file) ? file : null, fallback };
  }
  const file = path.resolve(baseDir, yaml.model);
  if (!existsSync(file)) {
    problems.add(
      ['realtime', 'semantic_vad', 'model'],
      `${file} does not exist: give the path of Smart Turn v3's ONNX file (docs/voice.md#semantic_vad)`,
    );
    return { modelPath: null, fallback };
  }
  return { modelPath: file, fallback };
}
