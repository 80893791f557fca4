/**
 * Baseline for the transport bench: mimics vLLM-Omni's SharedMemoryConnector as used by its chunk
 * adapter. Every chunk is its own /dev/shm file, created and filled under a per-chunk lock file; the
 * reader polls for the key every 1 ms, takes the lock, copies the bytes out and removes both files.
 *
 * vLLM-Omni holds the lock with fcntl.flock on `/dev/shm/shm_<key>_lockfile.lock`; Node has no flock,
 * so the lock here is the equivalent exclusive create (O_CREAT|O_EXCL) of the same kind of file. The
 * syscall count per chunk is the same order (open/lock/create/size/map-or-write/unlock/close on each side).
 */
import { closeSync, existsSync, openSync, readFileSync, readdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const DIR = '/dev/shm';
export const POLL_INTERVAL_MS = 1;

export class FileChunkConnector {
  readonly #prefix: string;

  /** `namespace` isolates one bench run's files (both processes must use the same one). */
  constructor(namespace: string) {
    this.#prefix = `${DIR}/chorus-bench-${namespace}-`;
  }

  put(key: string, bytes: Uint8Array): void {
    const lock = this.#lockPath(key);
    const fd = openSync(lock, 'wx', 0o600); // exclusive create = take the lock
    try {
      writeFileSync(this.#dataPath(key), bytes, { mode: 0o600 });
    } finally {
      closeSync(fd);
      unlinkSync(lock); // release
    }
  }

  /** One poll: the chunk's bytes if it is complete, else null. */
  tryGet(key: string): Buffer | null {
    const data = this.#dataPath(key);
    // Like vLLM-Omni opening SharedMemory(name=key): absent means "not yet". The writer takes the lock
    // before it creates the data file, so once the file exists the lock below waits the write out.
    if (!existsSync(data)) return null;
    let fd: number;
    try {
      fd = openSync(this.#lockPath(key), 'wx', 0o600);
    } catch {
      return null; // the writer still holds the lock: try again next poll
    }
    try {
      const bytes = readFileSync(data);
      unlinkSync(data);
      return bytes;
    } finally {
      closeSync(fd);
      unlinkSync(this.#lockPath(key));
    }
  }

  /** Polls every POLL_INTERVAL_MS until the chunk appears or the deadline passes. */
  async get(key: string, deadline: number): Promise<Buffer> {
    for (;;) {
      const bytes = this.tryGet(key);
      if (bytes !== null) return bytes;
      if (Date.now() >= deadline) throw new Error(`file chunk ${key} did not arrive before the deadline`);
      await sleep(POLL_INTERVAL_MS);
    }
  }

  /** Removes every file of this namespace (after a run, or after a crash mid-run). */
  removeAll(): void {
    const base = this.#prefix.slice(DIR.length + 1);
    for (const file of readdirSync(DIR)) {
      if (!file.startsWith(base)) continue;
      try {
        unlinkSync(`${DIR}/${file}`);
      } catch {
        // raced with the peer: already gone
      }
    }
  }

  #dataPath(key: string): string {
    return `${this.#prefix}${key}`;
  }

  #lockPath(key: string): string {
    return `${this.#prefix}${key}.lock`;
  }
}
