/** Small pieces every benchmark shares: timing and the git revision a result was measured on. */
import { execFileSync } from 'node:child_process';

/** Milliseconds one synchronous call takes. */
export function timed(fn: () => void): number {
  const start = performance.now();
  fn();
  return performance.now() - start;
}

/** HEAD's SHA, with `-dirty` when tracked files differ from it; 'unknown' outside a checkout. */
export function gitSha(): string {
  try {
    const git = (...args: string[]) =>
      execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const sha = git('rev-parse', 'HEAD');
    return git('status', '--porcelain', '--untracked-files=no').length > 0 ? `${sha}-dirty` : sha;
  } catch {
    return 'unknown';
  }
}
