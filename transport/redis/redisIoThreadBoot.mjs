// Entry of a redis connector's I/O thread. Loader hooks registered on the starting thread (bin/chorus.js, or
// `--import tsx` in a stage process) do not reach worker threads, and Node 20 cannot start a worker from a .ts file,
// so the thread registers tsx itself.
import { register } from 'tsx/esm/api';

register();
await import('./redisIoThread.ts');
