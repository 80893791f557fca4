// Entry of a VAD worker thread. Loader hooks registered on the server thread (bin/chorus.js registers tsx) do not
// reach worker threads, and Node 20 cannot start a worker from a .ts file, so the worker registers tsx itself.
import { register } from 'tsx/esm/api';

register();
await import('./vadWorker.ts');
