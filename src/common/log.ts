import { pino, type Logger } from 'pino';

/**
 * The one root logger. Child loggers bind {stage, pid} or {requestId}; hot paths log at debug only.
 * CHORUS_LOG_LEVEL sets the level (default info; tests set silent through vitest's env).
 */
export const logger: Logger = pino(
  {
    name: 'chorus',
    level: process.env.CHORUS_LOG_LEVEL ?? 'info',
    base: { pid: process.pid },
  },
  // Logs go to stderr: stdout belongs to command output (`chorus generate` streams the answer there).
  pino.destination({ fd: 2, sync: false }),
);

export type { Logger };
