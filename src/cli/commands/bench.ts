/**
 * `chorus bench`: the door to the bench's own command (bench/cli/bench.ts: its flags, its runs, its reports). The
 * bench is a client of the package (it imports src/index.ts only); the CLI reaches it through this door alone, and
 * loads it only when the command is asked for (src/cli/main.ts).
 */
export { run, usage } from '../../../bench/cli/bench.ts';
