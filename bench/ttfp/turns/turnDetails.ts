/**
 * Writes DIR/results.json, DIR/results.md and DIR/turns.json (every turn of every conversation: its outcome, TTFT,
 * TTFP, E2E and usage, for finding the slow or failed one behind a p50); returns their paths.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { requestMetrics } from '../metrics.ts';
import type { RequestTrace } from '../trace.ts';
import { formatTurnsMarkdown } from './formatTurns.ts';
import type { TurnsResult, TurnsRun } from './turnsResult.ts';

export interface TurnDetail {
  readonly variant: string;
  readonly concurrency: number;
  readonly conversation: number;
  readonly turn: number;
  readonly ok: boolean;
  readonly error: string | null;
  readonly request_id: string | null;
  readonly ttft_ms: number | null;
  readonly ttfp_ms: number | null;
  readonly e2e_ms: number;
  readonly input_tokens: number | null;
  readonly cached_tokens: number | null;
}

/** One record per turn of a run's conversations. */
export function turnDetails(run: TurnsRun, traces: readonly (readonly RequestTrace[])[]): TurnDetail[] {
  return traces.flatMap((conversation, c) =>
    conversation.map((t, i) => {
      const m = requestMetrics(t);
      return {
        variant: run.variant,
        concurrency: run.concurrency,
        conversation: c,
        turn: i + 1,
        ok: t.ok,
        error: t.error ?? null,
        request_id: t.requestId ?? null,
        ttft_ms: m.ttftMs,
        ttfp_ms: m.ttfpMs,
        e2e_ms: m.e2eMs,
        input_tokens: t.promptTokens ?? null,
        cached_tokens: t.cachedTokens ?? null,
      };
    }),
  );
}

export function writeTurnsResults(
  dir: string,
  result: TurnsResult,
  details: readonly TurnDetail[],
): Promise<{ json: string; markdown: string; turns: string }> {
  return writeTurnFiles(dir, result, formatTurnsMarkdown(result), details);
}

/** A conversations bench's three files in DIR: results.json, results.md and turns.json (every turn). */
export async function writeTurnFiles(
  dir: string,
  result: object,
  markdown: string,
  details: readonly object[],
): Promise<{ json: string; markdown: string; turns: string }> {
  await mkdir(dir, { recursive: true });
  const files = {
    json: path.join(dir, 'results.json'),
    markdown: path.join(dir, 'results.md'),
    turns: path.join(dir, 'turns.json'),
  };
  await Promise.all([
    writeFile(files.json, `${JSON.stringify(result, null, 2)}\n`),
    writeFile(files.markdown, markdown),
    writeFile(files.turns, `${JSON.stringify(details)}\n`),
  ]);
  return files;
}
