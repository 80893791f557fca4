/** Writes DIR/results.json, DIR/results.md and DIR/requests.json (every turn's trace); returns their paths. */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { formatVoiceMarkdown } from './formatVoiceReport.ts';
import type { TurnTrace } from './protocol.ts';
import type { VoiceBenchResult } from './voiceResults.ts';

export async function writeVoiceResults(
  dir: string,
  result: VoiceBenchResult,
  turns: readonly { readonly concurrency: number; readonly traces: readonly TurnTrace[] }[],
): Promise<{ json: string; markdown: string; requests: string }> {
  await mkdir(dir, { recursive: true });
  const files = {
    json: path.join(dir, 'results.json'),
    markdown: path.join(dir, 'results.md'),
    requests: path.join(dir, 'requests.json'),
  };
  await Promise.all([
    writeFile(files.json, `${JSON.stringify(result, null, 2)}\n`),
    writeFile(files.markdown, formatVoiceMarkdown(result)),
    writeFile(files.requests, `${JSON.stringify(turns)}\n`),
  ]);
  return files;
}
