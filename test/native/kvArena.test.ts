/**
 * The memory KV stores live in (native/src/arena.h, stages/models/KvBufferPool.ts): mapped outside V8's heap, pages
 * given back on request, and no work for V8's collector however the stores come and go.
 */
import { fork, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { addon } from '../../transport/shm/binding.ts';
import type { ChurnReport } from './fixtures/kvPoolChurn.ts';

const CHURN = new URL('./fixtures/kvPoolChurn.ts', import.meta.url).pathname;
const ADDON = new URL('../../native/build/Release/chorus_shm.node', import.meta.url).pathname;

describe('KV arena', () => {
  it('costs V8 no mark-compact: a thousand stores grown to 8 MB and given back, and 8 GiB of slabs', async () => {
    // V8's resizable ArrayBuffers, which the pool took before, added each growth to V8's external memory count for
    // good, and every 64 MB of it started a full mark-compact: this churn made ~100 of them. Slabs as N-API's external
    // buffers then counted 4 GiB each: a memory-reducing mark-compact when one was made (a stage's 25-45 ms pause).
    const child = fork(CHURN, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const [[report], [code]] = (await Promise.all([once(child, 'message'), once(child, 'exit')])) as [
      [ChurnReport],
      [number],
    ];
    expect(code).toBe(0);
    expect([report.regions, report.largeRegions, report.slabs]).toEqual([20, 128, 2]);
    expect(report.idleBytes).toBeLessThanOrEqual(4 << 20);
    expect(report.majors).toBe(0);
    expect(report.externalGrowth).toBeLessThan(16 << 20); // the pool's own small objects, not 8 GiB of address space
  });

  it('maps whole pages, releases only pages wholly inside a range, and refuses what it did not map', () => {
    expect(() => addon.reserveMemory(0)).toThrow(/bytes must be an integer >= 1/);
    expect(() => addon.reserveMemory(1.5)).toThrow(/bytes must be an integer >= 1/);
    expect(() => addon.reserveMemory(2 ** 32 + 1)).toThrow(/larger than/);
    expect(() => addon.releasePages(new ArrayBuffer(4096), 0, 4096)).toThrow(/not from reserveMemory/);
    const m = addon.reserveMemory(10_000);
    expect(m.byteLength).toBe(12_288);
    expect(() => addon.releasePages(m, 4096, 12_288)).toThrow(/runs past the buffer/);
    const v = new Float32Array(m);
    v.fill(1);
    addon.releasePages(m, 4096, 5000); // the second page only: the third is not wholly inside
    expect([v[1023], v[1024], v[2047], v[2048]]).toEqual([1, 0, 0, 1]);
  });

  it('unmaps a slab when its buffer and every view of it are collected, and not before', () => {
    const script = `const a = require(${JSON.stringify(ADDON)});
      const fs = require('node:fs');
      const slabs = () => fs.readFileSync('/proc/self/maps', 'utf8').split('\\n').filter((l) => {
        const [lo, hi] = l.split(' ')[0].split('-').map((x) => parseInt(x, 16));
        return hi - lo === 2 ** 32;
      }).length;
      let m = a.reserveMemory(2 ** 32);
      let v = new Float32Array(m, 4096, 4);
      v[0] = 3;
      const counts = [slabs()];
      m = null;
      gc();
      counts.push(slabs(), v[0]);
      v = null;
      gc();
      setImmediate(() => { gc(); console.log(JSON.stringify([...counts, slabs()])); });`;
    const run = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual([1, 1, 3, 0]); // mapped, kept while a view reads it, gone after
  });

  it('says what to change when the address space is not there (a process under `ulimit -v`)', () => {
    const script = `const a = require(${JSON.stringify(ADDON)});
      try { a.reserveMemory(2 ** 32); console.log('mapped'); }
      catch (e) { console.log(JSON.stringify([e.code, e.message])); }
      console.log(a.reserveMemory(1 << 20).byteLength);`;
    const run = spawnSync('bash', ['-c', `ulimit -v 3000000 && exec "$0" -e "$1"`, process.execPath, script], {
      encoding: 'utf8',
    });
    expect(run.status).toBe(0);
    const [refusal, small] = run.stdout.trim().split('\n');
    const [code, message] = JSON.parse(refusal) as [string, string];
    expect(code).toBe('CHORUS_ERR_KV_BUDGET');
    expect(message).toMatch(/cannot reserve 4294967296 bytes of address space for KV stores .*ulimit -v.*max_num_seqs/);
    expect(small).toBe(String(1 << 20)); // what fits is still mapped
  });
});
