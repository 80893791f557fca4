/**
 * The process of a server the bench starts for --config (serverProcess.ts is the bench's side): main (the
 * Orchestrator and the front end, inProcessServer.ts) and its stage processes, as `chorus serve` runs them, so that
 * a mode's main shares its heap, compiler and event loop with neither the bench's clients nor the other mode's
 * server. What the bench's account and report read off main is heard here on diagnostics_channel (main's packet
 * marks, the server-side first-packet times) and kept until the bench collects a block's worth of it, after the block:
 * nothing crosses the IPC channel while requests are measured.
 */
import { subscribe } from 'node:diagnostics_channel';
import { ChorusError, PACKET_MARK_CHANNEL, type PacketMark } from '../../src/basics.ts';
import { parseConfig } from '../../src/index.ts';
import { benchLogger } from '../benchLogger.ts';
import { startInProcessServer, type InProcessServer } from './inProcessServer.ts';
import { spawnedChannel, type SpawnedProcess } from './RemoteStageHost.ts';
import { ServerTimings } from './ServerTimings.ts';
import type { FromServer, ToServer } from './serverProcessProtocol.ts';

const send = (msg: FromServer) => process.send!(msg);
const log = benchLogger(process.stderr);
const timings = new ServerTimings();
const marks: PacketMark[] = [];
let server: InProcessServer | null = null;
/** A close or a stop has begun: a second does nothing. */
let stopping = false;
// What a remote stage host starts here is told to the bench at once (its tests check every such process is gone).
spawnedChannel.subscribe((p) => send({ type: 'spawned', process: p as SpawnedProcess }));

async function onMessage(msg: ToServer): Promise<void> {
  switch (msg.type) {
    case 'start': {
      if (msg.marks) subscribe(PACKET_MARK_CHANNEL, (m) => void marks.push(m as PacketMark));
      try {
        server = await startInProcessServer(parseConfig(msg.text, msg.file), log, msg.options);
        send({ type: 'ready', baseUrl: server.baseUrl, remote: server.remote });
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        send({ type: 'failed', message, ...(err instanceof ChorusError ? { code: err.code } : {}) });
        process.exitCode = 1;
        process.disconnect();
      }
      return;
    }
    case 'collect': {
      const ids = new Set(msg.requestIds);
      send({
        type: 'collected',
        marks: marks.filter((m) => ids.has(m.requestId)),
        timings: msg.requestIds.flatMap((id) => {
          const t = timings.get(id);
          return t ? [[id, t] as const] : [];
        }),
      });
      // What a block left is the bench's now (or no one's: another block's requests are not asked for again).
      marks.length = 0;
      timings.clear();
      return;
    }
    case 'close':
      stopping = true;
      try {
        await server?.close();
      } finally {
        server = null;
        process.disconnect();
      }
  }
}

process.on('message', (msg: ToServer) => {
  onMessage(msg).catch((err: unknown) => {
    log.error({ err }, 'the bench server process failed');
    process.exit(1);
  });
});

/** Stops the server (its stage processes, their shared memory) once, then exits; with none up, exits at once. */
function stop(): void {
  if (stopping) return;
  stopping = true;
  if (!server) process.exit();
  void server.close().finally(() => process.exit(0));
}

// The bench gone (its channel closed) without a close: stop the stages rather than leave them running. A Ctrl-C reaches
// every process of the terminal's group, this one too: it stops them in order as well, instead of dying with them.
process.on('disconnect', stop);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, stop);
send({ type: 'booted' });
