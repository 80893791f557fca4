/**
 * Where the kernel puts a process that another one wakes and goes on working (issues 41 and 46): the pipeline's
 * hops are all such wake-ups (main's add wakes the Thinker and main goes on; the Thinker's rows wake the Talker and
 * the Thinker decodes on). The waker wakes a child through a pipe every `--period-ms`, then spins `--waker-ms`; the
 * child, woken on its event loop as a stage is, reads the core it runs on at once (/proc/thread-self/stat), spins
 * `--wakee-ms` and reports. Arms: `free` (the kernel places both), `apart` (the waker on core 0, the child on core 1,
 * with taskset: the placement a free core gives). Per arm: how often the child woke on the waker's core, and its
 * delay from the write to running.
 *
 *   npx tsx bench/limit/wakePlacement.ts [--rounds 100] [--period-ms 20] [--waker-ms 5] [--wakee-ms 2]
 */
import { execFileSync, fork } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { scriptFlags } from '../scriptFlags.ts';

/** The core this thread runs on: field 39 of /proc/thread-self/stat, counted after the command's closing paren. */
function thisCore(): number {
  const stat = readFileSync('/proc/thread-self/stat', 'latin1');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[36]);
}

const nowMs = () => Number(process.hrtime.bigint()) / 1e6; // CLOCK_MONOTONIC: one clock for both processes

function spin(ms: number): void {
  const end = nowMs() + ms;
  while (nowMs() < end);
}

if (process.argv[2] === 'child') {
  const wakeeMs = Number(process.argv[3]);
  process.stdin.on('data', () => {
    const at = nowMs();
    const core = thisCore();
    spin(wakeeMs);
    process.send!({ at, core });
  });
} else {
  const v = scriptFlags({ rounds: 100, 'period-ms': 20, 'waker-ms': 5, 'wakee-ms': 2 });
  if (os.availableParallelism() < 2) throw new Error('wakePlacement needs two cores or more');
  const pin = (pid: number, core: number | null) =>
    execFileSync(
      'taskset',
      [
        '--all-tasks',
        '--cpu-list',
        '--pid',
        core === null ? `0-${os.availableParallelism() - 1}` : String(core),
        String(pid),
      ],
      { stdio: 'ignore' },
    );

  for (const arm of ['free', 'apart'] as const) {
    const child = fork(new URL(import.meta.url).pathname, ['child', String(v['wakee-ms'])], {
      stdio: ['pipe', 'inherit', 'inherit', 'ipc'],
      execArgv: process.execArgv,
    });
    await sleep(500); // the child's loader and its stdin listener
    if (arm === 'apart') {
      pin(process.pid, 0);
      pin(child.pid!, 1);
    }
    const delays: number[] = [];
    let same = 0;
    for (let i = 0; i < v.rounds; i++) {
      await sleep(v['period-ms']);
      spin(0.2); // running, as a waker is when it writes
      const core = thisCore();
      const sentAt = nowMs();
      child.stdin!.write('x');
      spin(v['waker-ms']);
      const [report] = (await once(child, 'message')) as [{ at: number; core: number }];
      delays.push(report.at - sentAt);
      if (report.core === core) same++;
    }
    if (arm === 'apart') pin(process.pid, null);
    child.kill();
    delays.sort((a, b) => a - b);
    const q = (p: number) => delays[Math.min(delays.length - 1, Math.floor(p * delays.length))].toFixed(3);
    const delay = `p50 ${q(0.5)} ms, p90 ${q(0.9)} ms, max ${q(1)} ms`;
    console.log(`${arm}: woken on the waker's core ${same} of ${v.rounds}; write -> running ${delay}`);
  }
  let pack = 'absent';
  try {
    pack = readFileSync('/proc/sys/kernel/sched_vcpu_pack', 'utf8').trim();
  } catch {
    // a kernel without the setting (or not readable): the line says so
  }
  console.log(`kernel ${os.release()}, kernel.sched_vcpu_pack ${pack}`);
}
