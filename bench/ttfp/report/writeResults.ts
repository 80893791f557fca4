/** Writes DIR/results.json, DIR/results.md and DIR/plot.svg; returns their paths. */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { BenchResult } from '../results.ts';
import { formatMarkdown, type ReportOptions } from './formatReport.ts';
import { plotSvg } from './plotSvg.ts';

export function writeResults(
  dir: string,
  result: BenchResult,
  options: ReportOptions = {},
): Promise<{ json: string; markdown: string; svg: string }> {
  const o = result.options;
  const subtitle =
    `input ${o.input_len}, output ${o.output_len}, ${o.num_prompts} prompts, ${o.protocol}, git ` +
    `${result.git_sha.slice(0, 7)}, ${result.started_at}`;
  return writeResultFiles(dir, result, formatMarkdown(result, options), plotSvg(result.runs, subtitle));
}

/** A bench run's three files in DIR: results.json (the result), results.md and plot.svg; returns their paths. */
export async function writeResultFiles(
  dir: string,
  result: object,
  markdown: string,
  svg: string,
): Promise<{ json: string; markdown: string; svg: string }> {
  await mkdir(dir, { recursive: true });
  const files = {
    json: path.join(dir, 'results.json'),
    markdown: path.join(dir, 'results.md'),
    svg: path.join(dir, 'plot.svg'),
  };
  await Promise.all([
    writeFile(files.json, `${JSON.stringify(result, null, 2)}\n`),
    writeFile(files.markdown, markdown),
    writeFile(files.svg, svg),
  ]);
  return files;
}
