/**
 * Names of ring segments and crash recovery. A segment is "/chorus-<ownerPid>-<16 hex>": the owner pid
 * in the name is what lets a later process find segments whose owner died without unlinking them
 * (SIGKILL, OOM): POSIX shared memory outlives its processes until it is unlinked.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { logger } from '../../src/common/log.ts';
import { addon } from './binding.ts';

const SHM_DIR = '/dev/shm';
// A segment, or its doorbell FIFO (`<segment>.bell`, which unlinking the segment's name removes too).
const SEGMENT_FILE = /^(chorus-(\d+)-[0-9a-f]{16})(\.bell)?$/;

export function newSegmentName(ownerPid: number = process.pid): string {
  return `/chorus-${ownerPid}-${randomBytes(8).toString('hex')}`;
}

/** The owner pid encoded in a segment name ("/chorus-123-…" or "chorus-123-…"), or null if not ours. */
export function ownerPidOfSegment(name: string): number | null {
  const m = SEGMENT_FILE.exec(name.startsWith('/') ? name.slice(1) : name);
  return m ? Number(m[2]) : null;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else, so it is alive.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Unlinks every Chorus segment whose owner process is gone; returns the names removed.
 * A recycled pid makes a dead owner look alive: that segment is kept (a leak, never a live ring lost).
 */
export function sweepStaleSegments(): string[] {
  let files: string[];
  try {
    files = readdirSync(SHM_DIR);
  } catch {
    return []; // no /dev/shm (not Linux): nothing to sweep
  }
  const removed: string[] = [];
  for (const file of files) {
    const pid = ownerPidOfSegment(file);
    if (pid === null || pid === process.pid || isAlive(pid)) continue;
    const name = `/${SEGMENT_FILE.exec(file)![1]}`;
    if (addon.unlink(name)) removed.push(name);
  }
  if (removed.length > 0) logger.warn({ removed }, 'unlinked shared-memory segments left by dead processes');
  return removed;
}
