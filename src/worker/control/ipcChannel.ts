/**
 * The ControlChannel over Node's child_process IPC pipe (advanced serialization), from either end.
 */
import type { ChildProcess } from 'node:child_process';
import type { ControlChannel } from './ControlChannel.ts';

/** Main's end: the pipe to a forked stage process. */
export function ipcChannelToChild<Out, In>(child: ChildProcess): ControlChannel<Out, In> {
  return {
    send(msg) {
      if (!child.connected) return false;
      child.send(msg as object);
      return true;
    },
    onMessage(handler) {
      const listener = (msg: In) => handler(msg);
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
export function ipcChannelToParent<Out, In>(): ControlChannel<Out, In> {
  return {
    send(msg) {
      // The pipe may be gone if main died; then this process is about to exit anyway.
      if (!process.connected) return false;
      process.send!(msg);
      return true;
    },
    onMessage(handler) {
      const listener = (msg: In) => handler(msg);
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
