/** Shared helpers for tests that run real pipelines. */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfig } from '../../src/config/loadConfig.ts';
import type { StageGraph } from '../../src/common/graph.ts';
import type { OutputEvent, RequestHandle } from '../../src/common/engine.ts';
import { concatFloat32 } from '../../src/common/arrays.ts';

const CONFIGS = join(import.meta.dirname, '..', '..', 'configs');

/** A shipped config with textual edits (YAML keys are unique, so `key: value` replacements are exact). */
export function configWith(name: string, edits: Record<string, string> = {}): StageGraph {
  let text = readFileSync(join(CONFIGS, name), 'utf8');
  for (const [from, to] of Object.entries(edits)) {
    if (!text.includes(from)) throw new Error(`config ${name} has no "${from}"`);
    text = text.replace(from, to);
  }
  return parseConfig(text, join(CONFIGS, name));
}

/**
 * A configWith edit turning engine.migration (on by default) off on the Talker of the tiny-omni configs, for tests of
 * what a lost Talker's requests cost without it (test/e2e/migration.test.ts has the migrating side).
 */
export const TALKER_MIGRATION_OFF: Readonly<Record<string, string>> = {
  'max_num_batched_tokens: 600 # the Talker prefills a burst in groups too':
    'max_num_batched_tokens: 600 # the Talker prefills a burst in groups too\n      migration: false',
};

export interface Collected {
  readonly text: string;
  readonly pcm: Float32Array;
  readonly events: readonly OutputEvent[];
  readonly done: Extract<OutputEvent, { type: 'done' }>;
}

export function collect(handle: RequestHandle, onEvent?: (e: OutputEvent) => void): Promise<Collected> {
  return new Promise((resolve, reject) => {
    const events: OutputEvent[] = [];
    handle.events.subscribe({
      next: (e) => {
        events.push(e);
        onEvent?.(e);
        if (e.type !== 'done') return;
        const text = events.map((x) => (x.type === 'text' ? x.delta : '')).join('');
        const audio = events.filter((x): x is Extract<OutputEvent, { type: 'audio' }> => x.type === 'audio');
        resolve({ text, pcm: concatFloat32(audio.map((a) => a.pcm)), events, done: e });
      },
      error: reject,
    });
  });
}

/** Waits for a condition that an asynchronous event will make true; fails loudly at the deadline. */
export async function waitFor(what: string, cond: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Chorus segments of this process in /dev/shm (names are /chorus-<ownerPid>-<random>). */
export function ownSegments(): string[] {
  return readdirSync('/dev/shm').filter((n) => n.startsWith(`chorus-${process.pid}-`));
}

/** Largest per-sample difference, measured in pcm16 steps. */
export function maxPcm16Diff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(Math.round(clamp(a[i]) * 32767) - Math.round(clamp(b[i]) * 32767));
    if (d > worst) worst = d;
  }
  return worst;
}

const clamp = (x: number) => Math.max(-1, Math.min(1, x));
