/**
 * SIGINT/SIGTERM -> one orderly close (drain, stop every stage process, unlink shared memory), then exit.
 * A second signal while closing exits at once (the children still leave on their own when the IPC channel drops,
 * and the next start sweeps segments of dead processes).
 */
import { logger } from '../common/log.ts';

export function shutdownOnSignal(close: (signal: NodeJS.Signals) => Promise<void>): () => void {
  let closing = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) {
      logger.warn({ signal }, 'second signal: exiting without waiting');
      process.exit(130);
    }
    closing = true;
    logger.info({ signal }, 'shutting down');
    close(signal).then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}
