/**
 * The `redis` client package, loaded on first use. Every process whose transport registry is loaded (main and each
 * stage process) imports this folder, but most deployments never open a Redis connection; loading the package
 * regardless was ~0.3 s of CPU per process quiet (~0.65 s at load 15), a tenth of a stage process's start-up, paid
 * five times per pipeline. The package is CommonJS, so a synchronous require serves the callers that build their
 * clients outside an await.
 */
import { createRequire } from 'node:module';
import type * as Redis from 'redis';

const require = createRequire(import.meta.url);
let loaded: typeof Redis | undefined;

export function redisPackage(): typeof Redis {
  loaded ??= require('redis') as typeof Redis;
  return loaded;
}

/** Blob-string replies as Buffers, not strings: chunks and encoder rows are bytes. */
export function bufferTypeMapping() {
  return { [redisPackage().RESP_TYPES.BLOB_STRING]: Buffer } as const;
}
