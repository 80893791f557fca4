/**
 * A titled block of labelled lines, one figure each, as `vllm bench serve` prints a run: the open loop's terminal
 * report (openLoop/formatOpenLoop.ts).
 */

/** Every line of such a block fits this (checked by test/unit/bench-openLoop.test.ts). */
export const REPORT_WIDTH = 100;
/** Labels are padded to this, values right-aligned after it: a two-column block like vLLM's. */
const LABEL_WIDTH = 44;
const VALUE_WIDTH = 14;
export const BLOCK_WIDTH = LABEL_WIDTH + VALUE_WIDTH;

/** `=== title ===` or `--- title ---` across the block. */
export function rule(title: string, fill: '=' | '-'): string {
  const text = ` ${title} `;
  const left = Math.max(3, Math.floor((BLOCK_WIDTH - text.length) / 2));
  return `${fill.repeat(left)}${text}${fill.repeat(Math.max(3, BLOCK_WIDTH - left - text.length))}`;
}

export function line(label: string, value: string): string {
  return `${`${label}:`.padEnd(LABEL_WIDTH)}${value.padStart(VALUE_WIDTH)}`;
}
