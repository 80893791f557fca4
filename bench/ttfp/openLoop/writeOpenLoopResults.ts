/** Writes an open-loop run's DIR/results.json, DIR/results.md and DIR/plot.svg; returns their paths. */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { formatOpenLoopMarkdown } from './formatOpenLoop.ts';
import { openLoopPlotSvg } from './openLoopPlot.ts';
import type { OpenLoopResult } from './runOpenLoopBench.ts';

export async function writeOpenLoopResults(
  dir: string,
  result: OpenLoopResult,
): Promise<{ json: string; markdown: string; svg: string }> {
  await mkdir(dir, { recursive: true });
  const files = {
    json: path.join(dir, 'results.json'),
    markdown: path.join(dir, 'results.md'),
    svg: path.join(dir, 'plot.svg'),
  };
  const o = result.options;
  const subtitle =
    `input ${o.input_len}, output ${o.output_len}, ${o.protocol}, burstiness ${o.burstiness}, git ` +
    `${result.git_sha.slice(0, 7)}, ${result.started_at}`;
  await Promise.all([
    writeFile(files.json, `${JSON.stringify(result, null, 2)}\n`),
    writeFile(files.markdown, formatOpenLoopMarkdown(result)),
    writeFile(files.svg, openLoopPlotSvg(result.rates, o.slo_ttfp_ms, subtitle)),
  ]);
  return files;
}
