/**
 * The voice clients (bench/video/cameraVoice.ts), in a process of their own (forked by VoiceClients.ts): the bench
 * may host the server in its own process, and 50 appends a second per session must not run on the event loop it
 * measures. Runs one closed loop at a time (each slot starts its next turn when its previous one has ended) and
 * reports every turn's trace.
 */
import { closedLoop } from '../common.ts';
import type { FromClients, ToClients, TurnTrace } from './protocol.ts';
import { voiceTurn } from './turns.ts';

function post(msg: FromClients): void {
  process.send?.(msg);
}

async function run(msg: Extract<ToClients, { type: 'run' }>): Promise<void> {
  const traces: TurnTrace[] = new Array(msg.turns.length);
  const startedMs = performance.now();
  await closedLoop(msg.turns.length, msg.concurrency, async (i) => {
    traces[i] = await voiceTurn(msg.settings, msg.turns[i]);
    post({ type: 'turn', runId: msg.runId, ok: traces[i].ok });
  });
  post({ type: 'run_done', runId: msg.runId, traces, durationMs: performance.now() - startedMs });
}

// The bench gone (stopped us, or died): nothing is left to report to, so no session may outlive it.
process.on('disconnect', () => process.exit(0));
process.on('message', (msg: ToClients) => {
  if (msg.type === 'stop') {
    process.disconnect?.();
    return;
  }
  run(msg).catch((err: unknown) =>
    post({
      type: 'failed',
      runId: msg.runId,
      message: err instanceof Error ? (err.stack ?? err.message) : String(err),
    }),
  );
});
post({ type: 'ready' });
