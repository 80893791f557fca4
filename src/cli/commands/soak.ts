/** `chorus soak`: the door to the bench's soak command (bench/cli/soak.ts), as `chorus bench` is (./bench.ts). */
export { run, usage } from '../../../bench/cli/soak.ts';
