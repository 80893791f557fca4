/* global process */
// The decoder spawner: a small Node process, started by main once while main is small, that starts video decoders
// (ffmpeg) when main asks (src/media/video/DecoderSpawner.ts). Why: spawn() forks in the calling thread and the
// kernel copies the parent's page tables before it returns, so main's event loop stopped for a time that grew with
// main's resident memory (2 ms at 78 MB, 157 ms at 379 MB, 292 ms at 680 MB measured here; nodejs/node#14917). This
// process stays ~45 MB, so its forks cost ~2 ms, and main never forks at all.
//
// No frame passes through here: main sends, before each `spawn`, the ffmpeg ends of socket pairs it made (one message
// per handle, `stdio`), this process hands them to the child as its stdio and closes its own copies at once, and
// main reads its ends. Main never writes into those pairs, so nothing waits to be read here meanwhile.
//
// Plain JavaScript, no loader: it starts in ~50 ms with nothing but Node's own modules. The messages are typed in
// DecoderSpawner.ts (ToSpawner, FromSpawner). When main goes, every child still running is killed and this process
// exits (mainGone).
import { spawn } from 'node:child_process';
import { getPriority } from 'node:os';

/** Decode id -> the stdio handles main sent for it so far (fd index -> socket). */
const stdioOf = new Map();
/** Decode id -> its running child. */
const running = new Map();

/**
 * Main is gone (its IPC channel closed, even on SIGKILL): every child still running is killed and this process exits.
 * A send that fails is the same news, sometimes first: main killed while a decoder starts made the `spawned` message's
 * write fail (EPIPE), and thrown as an unhandled 'error' it ended this process before 'disconnect' could kill the
 * decoder, which then outlived main (test/unit/decoderSpawner.test.ts, once in CI).
 */
function mainGone() {
  for (const child of running.values()) child.kill('SIGKILL');
  process.exit(0);
}

const send = (message) => {
  if (process.connected) process.send(message, undefined, undefined, (err) => err && mainGone());
};

function start({ id, file, args, nice }) {
  const handles = stdioOf.get(id) ?? [];
  stdioOf.delete(id);
  // fd 0 is never given (inputs are files), fds 1.. are main's sockets in their order.
  const stdio = ['ignore', ...Array.from(handles.slice(1), (h) => h ?? 'ignore')];
  // At its priority from its first instruction: coreutils' nice execs the decoder with it (a setPriority after spawn
  // left a window where it ran at ours). A value at or below ours cannot be set (lowering nice takes privilege).
  const increment = nice === null ? 0 : nice - getPriority();
  const [command, argv] = increment > 0 ? ['nice', ['-n', String(increment), file, ...args]] : [file, args];
  let child;
  try {
    child = spawn(command, argv, { stdio });
  } catch (err) {
    send({ type: 'error', id, message: err.message });
    return;
  } finally {
    // The child holds its own copies now: main sees the end of each stream once the child's copy closes.
    for (const h of handles) h?.destroy();
  }
  if (child.pid === undefined) {
    child.once('error', (err) => send({ type: 'error', id, message: err.message }));
    return;
  }
  running.set(id, child);
  send({ type: 'spawned', id, pid: child.pid });
  child.once('exit', (code, signal) => {
    running.delete(id);
    send({ type: 'exit', id, code, signal });
  });
}

process.on('message', (message, handle) => {
  if (message.type === 'stdio') {
    const handles = stdioOf.get(message.id) ?? [];
    handles[message.fd] = handle;
    stdioOf.set(message.id, handles);
  } else if (message.type === 'spawn') start(message);
  else if (message.type === 'kill') running.get(message.id)?.kill('SIGKILL');
});

process.on('disconnect', mainGone);
process.on('error', mainGone); // the channel's own failure, outside any send
