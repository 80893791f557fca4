/** `promtool check metrics` (Debian's prometheus package; .ci/run installs it) on a /metrics body. */
import { spawnSync } from 'node:child_process';

/** What promtool said (empty when the exposition is clean); throws when promtool is not installed. */
export function promtoolProblems(exposition: string): string {
  const run = spawnSync('promtool', ['check', 'metrics'], { input: exposition, encoding: 'utf8' });
  if (run.error) throw new Error(`promtool did not run (${run.error.message}): apt-get install prometheus`);
  const said = `${run.stdout}${run.stderr}`.trim();
  return run.status === 0 ? said : said || `promtool exited with ${run.status}`;
}
