/**
 * The ControlChannel over Node's child_process IPC pipe (advanced serialization), from either end. Both ends run
 * the same code, so no version travels here; every message still passes the guard (its type known, its fields
 * there), because a throw in a 'message' listener on main's side crashes main.
 */
import type { ChildProcess } from 'node:child_process';
import { logger } from '../../common/log.ts';
import type { ControlChannel } from '../../worker/ControlChannel.ts';
import { ControlGuard } from '../ControlGuard.ts';
import { mainToStageProblem, stageToMainProblem } from '../controlChecks.ts';

type ProblemOf = (msg: unknown) => string | null;

/** A failed write means the other end is gone; its 'disconnect' tells the owner (see send below). */
function ignoreSendFailure(): void {}

/** Main's end: the pipe to a forked stage process. */
export function ipcChannelToChild<Out, In>(
  child: ChildProcess,
  problemOf: ProblemOf = stageToMainProblem,
): ControlChannel<Out, In> {
  const guard = new ControlGuard(logger.child({ component: 'control', child: child.pid }));
  const name = `ipc:${child.pid}`;
  return {
    send(msg) {
      if (!child.connected) return false;
      // A stage that died a moment ago is still `connected` until its pipe's end is read: the write then fails
      // later (EPIPE). With a callback that failure is handed here, not thrown as an 'error' event on the child
      // (nothing listens after boot, so it would crash main); the child's 'disconnect' and 'exit' follow, and the
      // supervisor fails what the stage held.
      child.send(msg as object, ignoreSendFailure);
      return true;
    },
    onMessage(handler) {
      const listener = (msg: unknown) => guard.accept(name, msg, problemOf, handler);
      child.on('message', listener);
      return () => child.off('message', listener);
    },
    onClose(handler) {
      child.once('disconnect', handler);
    },
    get connected() {
      return child.connected;
    },
    close() {
      if (child.connected) child.disconnect();
    },
  };
}

/** A stage process's end: the pipe to the main process that forked it. */
export function ipcChannelToParent<Out, In>(
  problemOf: ProblemOf = (msg) => mainToStageProblem(msg),
): ControlChannel<Out, In> {
  const guard = new ControlGuard(logger.child({ component: 'control' }));
  return {
    send(msg) {
      // The pipe may be gone if main died; then this process is about to exit anyway.
      if (!process.connected) return false;
      process.send!(msg, undefined, undefined, ignoreSendFailure);
      return true;
    },
    onMessage(handler) {
      const listener = (msg: unknown) => guard.accept('ipc:main', msg, problemOf, handler);
      process.on('message', listener);
      return () => process.off('message', listener);
    },
    onClose(handler) {
      process.once('disconnect', handler);
    },
    get connected() {
      return process.connected === true;
    },
    close() {
      process.disconnect?.();
    },
  };
}
