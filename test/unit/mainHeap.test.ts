/**
 * Main's V8 flags (src/engine/mainHeap.ts) are set from inside the process, where V8 ignores a flag it does not know
 * without a word: so each must be one this Node's V8 takes on its command line, which refuses an unknown one.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { MAIN_V8_FLAGS } from '../../src/engine/mainHeap.ts';

describe("main's V8 flags", () => {
  it('are flags this V8 knows', () => {
    expect(MAIN_V8_FLAGS.length).toBeGreaterThan(0);
    for (const flag of MAIN_V8_FLAGS) {
      const run = spawnSync(process.execPath, [flag, '-e', '0'], { encoding: 'utf8' });
      expect({ flag, status: run.status, stderr: run.stderr }).toEqual({ flag, status: 0, stderr: '' });
    }
    const unknown = spawnSync(process.execPath, ['--heap-growing-percentage=300', '-e', '0'], { encoding: 'utf8' });
    expect(unknown.status).not.toBe(0); // the check can fail
  });
});
