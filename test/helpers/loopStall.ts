/**
 * For tests of a timer that judges a peer silent from the event loop that also reads the peer: a connected socket
 * pair (what is written to `client` waits in `server`'s buffer until the loop polls), a synchronous stall, and a
 * wait for the check phase (after the next poll).
 */
import { once } from 'node:events';
import { createConnection, createServer, type Socket } from 'node:net';

/** A connected pair on 127.0.0.1; `close` ends both and the listener. */
export async function socketPair(): Promise<{ server: Socket; client: Socket; close: () => void }> {
  const listener = createServer();
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  const { port } = listener.address() as { port: number };
  const accepted = once(listener, 'connection') as Promise<[Socket]>;
  const client = createConnection(port, '127.0.0.1');
  const [server] = await accepted;
  return { server, client, close: () => (client.destroy(), server.destroy(), listener.close()) };
}

/** The process stalls: nothing else runs for `ms`. */
export function busyFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/** Resolves in the loop's check phase: after its next poll for I/O, before its next timers. */
export const afterPoll = () => new Promise((resolve) => setImmediate(resolve));
