/**
 * Child process for vadClose.test.ts: starts a VadService with two workers, sends audio on a few streams, closes
 * while audio is still on its way, and then does nothing: the process must exit by itself (no handle left).
 */
import { subscribe } from 'node:diagnostics_channel';
import { VadService, DEFAULT_TURN_PARAMS } from '../../src/voice/VadService.ts';

const vad = await VadService.start({ workers: 2 });
const streams = Array.from({ length: 4 }, () => vad.open(DEFAULT_TURN_PARAMS, () => {}));
const firstWindows = new Promise<void>((resolve) => subscribe('chorus:vad:windows', () => resolve()));
const noise = Int16Array.from({ length: 24000 }, (_, i) => Math.round(3000 * Math.sin(i * 0.37) * Math.sin(i * 0.011)));
for (const stream of streams) stream.push(noise);
await firstWindows;
for (const stream of streams) stream.push(noise); // still in flight when close() starts
await vad.close();
await vad.close(); // idempotent
process.stdout.write(`closed streams=${vad.streams}\n`);
