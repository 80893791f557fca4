/** Concatenates typed arrays of one kind (audio chunks, embedding rows) into a new one that `make` allocates. */
export function concatArrays<T extends Float32Array | Int16Array>(parts: readonly T[], make: (length: number) => T): T {
  const out = make(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export function concatFloat32(parts: readonly Float32Array[]): Float32Array {
  return concatArrays(parts, (length) => new Float32Array(length));
}

/** A typed array (or Buffer) as appendGrowing needs it. */
interface NumberArray extends ArrayLike<number> {
  set(array: ArrayLike<number>, offset?: number): void;
  subarray(begin?: number, end?: number): ArrayLike<number>;
}

/**
 * `input` written after the first `length` elements of `buffer`, in place when it fits; else into a new array from
 * `allocate` of at least twice the size (so appends cost amortized O(1) copies), holding those elements first. The
 * array to keep is returned; the caller's length grows by `input.length`.
 */
export function appendGrowing<T extends NumberArray>(
  buffer: T,
  length: number,
  input: ArrayLike<number>,
  allocate: (size: number) => T,
): T {
  const needed = length + input.length;
  if (needed > buffer.length) {
    const grown = allocate(Math.max(needed, 2 * buffer.length));
    grown.set(buffer.subarray(0, length));
    buffer = grown;
  }
  buffer.set(input, length);
  return buffer;
}
