/* global Buffer */
// A worker thread that gathers and parses large JSON request bodies, so main's event loop never spends the
// ~100-600 ms a 15 MiB body took it (copy, decode, JSON.parse, garbage): src/server/JsonBodyParser.ts streams the
// body here chunk by chunk. Plain JavaScript: Node 20 cannot start a worker from a .ts file. It parses exactly as
// fastify does: secure-json-parse, refusing __proto__ and constructor.prototype keys.
import { createRequire } from 'node:module';
import { parentPort } from 'node:worker_threads';

// fastify's own dependency, resolved from fastify so that it is the copy fastify parses with.
const secureJson = createRequire(import.meta.resolve('fastify'))('secure-json-parse');

/** Body id -> its chunks so far. */
const bodies = new Map();

parentPort.on('message', (msg) => {
  if (msg.chunk) {
    const chunks = bodies.get(msg.id) ?? [];
    chunks.push(msg.chunk);
    bodies.set(msg.id, chunks);
    return;
  }
  const chunks = bodies.get(msg.id) ?? [];
  bodies.delete(msg.id);
  if (msg.abort) return;
  try {
    const text = Buffer.concat(chunks).toString('utf8');
    const value = secureJson.parse(text, { protoAction: 'error', constructorAction: 'error' });
    parentPort.postMessage({ id: msg.id, ok: true, value });
  } catch {
    parentPort.postMessage({ id: msg.id, ok: false });
  }
});
