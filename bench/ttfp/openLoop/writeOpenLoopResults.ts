/** Writes an open-loop run's DIR/results.json, DIR/results.md and DIR/plot.svg; returns their paths. */
import { writeResultFiles } from '../report/writeResults.ts';
import { formatOpenLoopMarkdown } from './formatOpenLoop.ts';
import { openLoopPlotSvg } from './openLoopPlot.ts';
import type { OpenLoopResult } from './runOpenLoopBench.ts';

export function writeOpenLoopResults(
  dir: string,
  result: OpenLoopResult,
): Promise<{ json: string; markdown: string; svg: string }> {
  const o = result.options;
  const subtitle =
    `input ${o.input_len}, output ${o.output_len}, ${o.protocol}, burstiness ${o.burstiness}, git ` +
    `${result.git_sha.slice(0, 7)}, ${result.started_at}`;
  const svg = openLoopPlotSvg(result.rates, o.slo_ttfp_ms, subtitle);
  return writeResultFiles(dir, result, formatOpenLoopMarkdown(result), svg);
}
