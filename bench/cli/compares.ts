/**
 * `chorus bench`'s server flags (--url or --config, not both) and its --compare-* flags: at most one, those that
 * need both servers started by the bench refused with --url, and --compare-tracing only where it is measured (the
 * closed-loop TTFP bench).
 */
import { UsageError } from '../../src/basics.ts';

export interface CompareFlags {
  readonly url?: string;
  readonly config?: string;
  readonly turns?: string;
  readonly 'compare-sync'?: boolean;
  readonly 'compare-config'?: string;
  readonly 'compare-scheduling'?: boolean;
  readonly 'compare-prefix-cache'?: boolean;
  readonly 'compare-routing'?: string;
  readonly 'compare-tracing'?: boolean;
  readonly 'compare-compiled'?: boolean;
}

/** A running server (--url) or one the bench starts (--config), not both. */
export function checkTargetFlags(v: Pick<CompareFlags, 'url' | 'config'>): void {
  if (v.url !== undefined && v.config !== undefined)
    throw new UsageError('give either --url (a running server) or --config (the bench starts one), not both');
}

export function checkCompareFlags(v: CompareFlags, openLoop: boolean): void {
  if (v['compare-config'] !== undefined && v.url !== undefined)
    throw new UsageError('--compare-config is for --config: the bench starts both servers');
  const compares = [
    v['compare-sync'] === true,
    v['compare-config'] !== undefined,
    v['compare-scheduling'] === true,
    v['compare-prefix-cache'] === true,
    v['compare-routing'] !== undefined,
    v['compare-tracing'] === true,
    v['compare-compiled'] === true,
  ];
  if (compares.filter(Boolean).length > 1)
    throw new UsageError(
      'give one of --compare-sync, --compare-config, --compare-scheduling, --compare-prefix-cache and ' +
        '--compare-routing (or --compare-tracing, --compare-compiled)',
    );
  const bothStarted = ['compare-scheduling', 'compare-prefix-cache', 'compare-routing', 'compare-tracing'] as const;
  for (const flag of [...bothStarted, 'compare-compiled'] as const)
    if (v[flag] !== undefined && v[flag] !== false && v.url !== undefined)
      throw new UsageError(`--${flag} is for --config: the bench starts both servers`);
  for (const flag of ['compare-tracing', 'compare-compiled'] as const)
    if (v[flag] === true && (v.turns !== undefined || openLoop))
      throw new UsageError(`--${flag} is for the closed-loop TTFP bench (not --turns or --request-rate)`);
}
