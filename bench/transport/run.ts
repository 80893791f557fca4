/**
 * `node --import tsx bench/transport/run.ts [--iterations N] [--file-iterations N] [--frames N]
 *  [--transports shm,file,ipc,redis] [--redis-url URL] [--json]` — prints the ratio table (or the raw result as JSON).
 */
import { parseArgs } from 'node:util';
import { formatTransportTable } from './formatTransportTable.ts';
import { runTransportBench, type TransportKind } from './runTransportBench.ts';

const { values } = parseArgs({
  options: {
    iterations: { type: 'string' },
    'file-iterations': { type: 'string' },
    frames: { type: 'string' },
    transports: { type: 'string' },
    'redis-url': { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});

const num = (v: string | undefined): number | undefined => (v === undefined ? undefined : Number(v));
const result = await runTransportBench({
  latencyIterations: num(values.iterations),
  fileLatencyIterations: num(values['file-iterations']),
  throughputFrames: num(values.frames),
  transports: values.transports?.split(',') as TransportKind[] | undefined,
  ...(values['redis-url'] !== undefined ? { redisUrl: values['redis-url'] } : {}),
});
process.stdout.write(values.json ? `${JSON.stringify(result, null, 2)}\n` : `${formatTransportTable(result)}\n`);
