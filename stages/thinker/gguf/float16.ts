/**
 * IEEE 754 half precision -> float32 (Node 20 has no Float16Array). A 64 Ki-entry table, built on first use:
 * a GGUF's quantized blocks each carry one or two f16 scales, so the conversion runs millions of times.
 */
let table: Float32Array | null = null;

function decode(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const fraction = h & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24; // subnormal (or zero)
  if (exponent === 31) return fraction === 0 ? sign * Infinity : NaN;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

export function float16ToFloat32(h: number): number {
  if (!table) {
    table = new Float32Array(65536);
    for (let i = 0; i < 65536; i++) table[i] = decode(i);
  }
  return table[h];
}
