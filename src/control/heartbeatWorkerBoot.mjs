// Entry of a stage's heartbeat thread (heartbeatWorker.ts). Loader hooks registered on the starting thread do not
// reach worker threads, and Node 20 cannot start a worker from a .ts file, so the thread registers tsx itself.
import { register } from 'tsx/esm/api';

register();
await import('./heartbeatWorker.ts');
