/**
 * Block names for the prefix cache (PrefixCache.ts): block k of a sequence is named by
 * hash(name of block k - 1, the inputs of its positions), and block 0 by hash(root, its inputs), where the root
 * names the model (another model file or size never shares a name). A name therefore stands for every input from
 * position 0 to the block's end: equal names, equal prefixes (to the hash's 128 bits).
 *
 * What "the inputs" of a position are is the caller's: the Thinker writes the token id and, at a media position,
 * the media row itself (the floats the model reads there, so the same placeholder tokens behind other image or
 * audio bytes never match, and a clip that grew matches on the windows it shares); the Talker writes its
 * conditioning row. A video's positions are named by the clip's block key and the offset in its span instead
 * (writeMediaKey): the key stands for its rows (its bytes, sampling and encoder), so its names are known before the
 * rows are, a second question about the clip finds its KV without waiting for an encode, and main can name them too.
 */
import { createHash, type Hash } from 'node:crypto';

export interface BlockNames {
  /** Names of the full blocks whose inputs are all known. */
  readonly names: string[];
  /** True when the walk stopped at a position whose input is not known yet (more blocks may follow later). */
  readonly stoppedAtUnknown: boolean;
}

/**
 * Names the full blocks of positions [0, limit). `write(hash, p)` adds position p's inputs to the hash and returns
 * false when they are not known yet (the walk stops there, before that block).
 */
export function blockNames(
  root: string,
  blockPositions: number,
  limit: number,
  write: (hash: Hash, position: number) => boolean,
): BlockNames {
  return chainNames(root, blockPositions, limit, (hash, start) => {
    for (let p = start; p < start + blockPositions; p++) if (!write(hash, p)) return false;
    return true;
  });
}

/** The chain itself: `writeBlock(hash, start)` adds the inputs of the block at `start` (false: not known yet). */
function chainNames(
  root: string,
  blockPositions: number,
  limit: number,
  writeBlock: (hash: Hash, start: number) => boolean,
): BlockNames {
  const names: string[] = [];
  let previous = root;
  for (let start = 0; start + blockPositions <= limit; start += blockPositions) {
    const name = nextName(previous, (hash) => writeBlock(hash, start));
    if (name === null) return { names, stoppedAtUnknown: true };
    names.push((previous = name));
  }
  return { names, stoppedAtUnknown: false };
}

/** The name of the block after `previous` (the root, or the block before); null when `write` lacks its inputs. */
function nextName(previous: string, write: (hash: Hash) => boolean): string | null {
  const hash = createHash('sha256').update(previous);
  return write(hash) ? hash.digest('base64url').slice(0, 22) : null;
}

/**
 * The root of a stage's name chain: its model's settings (another model file or size never matches, nor a reloaded
 * one). The stage's cache and main's router (predicting a Thinker's blocks) both name from it.
 */
export function modelRoot(model: unknown): string {
  return JSON.stringify(model);
}

/**
 * The root a request's blocks are named from: the stage's (modelRoot), with the request's cache salt when it has one
 * (GenerateRequest.cacheSalt, as main sends it to the stages: a digest). Every name of the chain then stands for the
 * salt too, so requests of two salts never share a block, while requests of one salt share as before; a request
 * without a salt names exactly as it did before salts existed. The Thinker's cache, the Talker's and main's router
 * (predicting what a Thinker holds) all name from it.
 */
export function saltedRoot(root: string, cacheSalt: string | undefined): string {
  return cacheSalt === undefined ? root : JSON.stringify([root, cacheSalt]);
}

/** The shortened name a routing summary carries (HeldBlocks): 66 bits, enough to tell a cache's blocks apart. */
export const ROUTING_NAME_CHARS = 11;

const idBytes = new Int32Array(1);

/** Adds a token id to a block's hash, as every namer of token positions must (the Thinker's cache, main's router). */
export function writeTokenId(hash: Hash, id: number): void {
  idBytes[0] = id;
  hash.update(new Uint8Array(idBytes.buffer));
}

/** A media span whose positions are named by its item's block key and offset, not by its rows (a video). */
export interface KeyedSpan {
  readonly start: number;
  readonly length: number;
  readonly blockKey: string;
  /** The item's row at `start` (a clip heard with its audio track is several spans: MediaSpan.offset). */
  readonly offset?: number;
}

const offsetBytes = new Int32Array(2);

/** Adds a keyed media position (after its token id): the item's key, then its offset in the span. */
export function writeMediaKey(hash: Hash, blockKey: string, offset: number): void {
  offsetBytes[0] = -1; // never a token id's bytes alone: a keyed position cannot collide with a text one
  offsetBytes[1] = offset;
  hash.update(blockKey).update(new Uint8Array(offsetBytes.buffer));
}

/**
 * The names of the whole blocks of positions [0, limit) of a prompt whose positions up to there are tokens or keyed
 * media (main names a prompt up to its first media position without a key: it does not have the media rows).
 */
export function tokenBlockNames(
  root: string,
  blockPositions: number,
  ids: readonly number[],
  limit: number,
  keyed: readonly KeyedSpan[] = [],
): string[] {
  return new TokenBlockChain(root, blockPositions, ids, limit, keyed).all();
}

/**
 * tokenBlockNames' names, each hashed when it is first asked for (name k needs names 0..k-1, so asking for k hashes
 * up to k). Main's router compares a prompt's names with what each Thinker holds block by block and stops at the
 * first block none holds: a prompt no cache shares hashes one block on its way to its first token, not all of them
 * (the rest, which the queue and the prediction read, once the adds are sent). `chars` keeps each name's first chars
 * only (ROUTING_NAME_CHARS: the routing summaries' names); default whole.
 */
export class TokenBlockChain {
  /** How many whole blocks [0, limit) holds: the names there are. */
  readonly length: number;
  readonly #names: string[] = [];
  readonly #writeBlock: (hash: Hash, start: number) => boolean;
  #previous: string;

  constructor(
    root: string,
    private readonly blockPositions: number,
    ids: readonly number[],
    limit: number,
    keyed: readonly KeyedSpan[] = [],
    private readonly chars?: number,
  ) {
    this.length = Math.floor(Math.min(limit, ids.length) / blockPositions);
    this.#previous = root;
    this.#writeBlock = keyed.length === 0 ? idsWriter(ids, blockPositions) : keyedWriter(ids, blockPositions, keyed);
  }

  /** Name k (0 <= k < length). */
  at(k: number): string {
    if (!(k >= 0 && k < this.length)) throw new RangeError(`block ${k} of ${this.length}`);
    while (this.#names.length <= k) {
      const start = this.#names.length * this.blockPositions;
      this.#previous = nextName(this.#previous, (hash) => this.#writeBlock(hash, start))!; // token ids: always known
      this.#names.push(this.chars === undefined ? this.#previous : this.#previous.slice(0, this.chars));
    }
    return this.#names[k];
  }

  /** How many names are hashed so far. */
  get hashed(): number {
    return this.#names.length;
  }

  /** Every name (the chain hashed to its end). */
  all(): string[] {
    if (this.length > 0) this.at(this.length - 1);
    return this.#names.slice();
  }
}

/**
 * Token ids only (most prompts): a block's ids go into its hash in one update, the very bytes writeTokenId writes one
 * position at a time (so the names are the Thinker's), without a call into the hash per position.
 */
function idsWriter(ids: readonly number[], blockPositions: number): (hash: Hash, start: number) => boolean {
  const block = new Int32Array(blockPositions);
  const bytes = new Uint8Array(block.buffer);
  return (hash, start) => {
    for (let i = 0; i < blockPositions; i++) block[i] = ids[start + i];
    hash.update(bytes);
    return true;
  };
}

/** Token ids with keyed media spans: position by position, a keyed one's key and offset after its id. */
function keyedWriter(
  ids: readonly number[],
  blockPositions: number,
  keyed: readonly KeyedSpan[],
): (hash: Hash, start: number) => boolean {
  return (hash, start) => {
    for (let p = start; p < start + blockPositions; p++) {
      writeTokenId(hash, ids[p]);
      const span = keyed.find((s) => p >= s.start && p < s.start + s.length);
      if (span) writeMediaKey(hash, span.blockKey, (span.offset ?? 0) + p - span.start);
    }
    return true;
  };
}

/**
 * The names of a text-only sequence's whole blocks of positions [0, limit): its prompt's token ids, then the ones it
 * generated, named as tokenBlockNames names them (the same bytes as writeTokenId, a block's ids in one update); the
 * walk stops at a position not generated yet (stoppedAtUnknown), as blockNames does. The Thinker names a text prompt
 * so when it is added, on its way to the first step: position by position that took 0.1-0.3 ms of a first packet.
 */
export function idBlockNames(
  root: string,
  blockPositions: number,
  prompt: readonly number[],
  generated: readonly number[],
  limit: number,
): BlockNames {
  const known = prompt.length + generated.length;
  const ids = limit <= prompt.length || generated.length === 0 ? prompt : [...prompt, ...generated];
  const names = tokenBlockNames(root, blockPositions, ids, Math.min(limit, known));
  return { names, stoppedAtUnknown: Math.floor(limit / blockPositions) > names.length };
}

/** Bytes of a float row as the hash reads them (its exact bits: -0 and 0 differ, as they do for the model). */
export function rowBytes(row: Float32Array): Uint8Array {
  return new Uint8Array(row.buffer, row.byteOffset, row.byteLength);
}
