import { fork } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ipcChannelToChild } from '../../src/control/ipc/ipcChannel.ts';

describe('ipcChannelToChild', () => {
  it('sends to a stage that just died without an EPIPE error event, then reports the close', async () => {
    // The soak's kill-stage run crashed main this way: a request sent to the killed Talker before its pipe's end
    // was read. Sending every turn of the loop until the channel sees the disconnect makes the failed writes happen.
    const child = fork('-e', [], { execArgv: ['-e', 'setInterval(() => {}, 1000)'], serialization: 'advanced' });
    const errors: Error[] = [];
    const onError = (err: Error) => errors.push(err);
    await once(child, 'spawn');
    const channel = ipcChannelToChild<{ n: number }, never>(child);
    const closed = new Promise<void>((resolve) => channel.onClose(resolve));
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    let accepted = 0;
    while (channel.connected) {
      if (channel.send({ n: accepted })) accepted += 1;
      await new Promise((resolve) => setImmediate(resolve));
    }
    await closed;
    child.on('error', onError); // an error event still queued would land here instead of crashing the run
    await exited;
    await new Promise((resolve) => setImmediate(resolve));
    expect(accepted).toBeGreaterThan(0); // writes were attempted after the kill
    expect(errors).toEqual([]);
    expect(channel.send({ n: -1 })).toBe(false); // a closed channel refuses at once
  });
});
