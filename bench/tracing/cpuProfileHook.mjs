// A CPU profile of each Chorus process over a window you choose, for bench/tracing/profileShares.ts. Node 20 refuses
// --cpu-prof in NODE_OPTIONS, and a whole-life profile would be mostly the models' start; so this module, preloaded in
// every process through NODE_OPTIONS (`chorus serve` passes its environment to the stage processes it starts):
//
//   CHORUS_PROFILE_DIR=/tmp/prof NODE_OPTIONS="--import $PWD/bench/tracing/cpuProfileHook.mjs" \
//     node bin/chorus.js serve --config configs/tiny-omni-text-in.yaml --port 8000
//
// starts the V8 sampling profiler (500 us) on the first SIGUSR2 a process gets, and on the next one writes
// <dir>/<instance>-<pid>.cpuprofile and .cpu.json: the process's CPU time between the two signals, all threads, and
// by thread (Linux's /proc/self/task: the JavaScript thread, where onnxruntime's runs go too at 1 intra-op thread,
// apart from V8's and libuv's helpers, by name).
// Signal main and its stage processes together (`kill -USR2 $MAIN $(pgrep -P $MAIN)`) around the requests to measure.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { performance } from 'node:perf_hooks';
import process from 'node:process';

const dir = process.env.CHORUS_PROFILE_DIR;
if (!dir) throw new Error('cpuProfileHook: set CHORUS_PROFILE_DIR to the directory the profiles go to');
const session = new Session();
session.connect();
let window = null;

/** CPU ms of each thread of this process so far, by tid (utime + stime, in clock ticks of 10 ms). */
function threadTimes() {
  const out = new Map();
  for (const tid of readdirSync('/proc/self/task')) {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const name =
      tid === String(process.pid) ? 'javascript' : readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
    out.set(tid, { name, ms: (Number(fields[11]) + Number(fields[12])) * 10 });
  }
  return out;
}

process.on('SIGUSR2', () => {
  if (window === null) {
    session.post('Profiler.enable');
    session.post('Profiler.setSamplingInterval', { interval: 500 });
    session.post('Profiler.start');
    window = { cpu: process.cpuUsage(), threads: threadTimes(), startedAtMs: performance.now() };
    return;
  }
  const cpu = process.cpuUsage(window.cpu);
  const wallMs = performance.now() - window.startedAtMs;
  const threads = {};
  for (const [tid, { name, ms }] of threadTimes())
    threads[name] = (threads[name] ?? 0) + ms - (window.threads.get(tid)?.ms ?? 0);
  window = null;
  const base = `${dir}/${(process.env.CHORUS_STAGE ?? 'main').replace('#', '_')}-${process.pid}`;
  session.post('Profiler.stop', (err, result) => {
    if (err) throw err;
    writeFileSync(`${base}.cpuprofile`, JSON.stringify(result.profile));
    writeFileSync(`${base}.cpu.json`, JSON.stringify({ cpuMs: (cpu.user + cpu.system) / 1000, wallMs, threads }));
  });
});
