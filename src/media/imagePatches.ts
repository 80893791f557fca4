/**
 * RGB image -> the vision encoder's input: resized to the patch grid, CLIP-normalised, cut into patches.
 *
 * Grid choice (Qwen2-VL's "smart resize"): keep the aspect ratio, round each side to a multiple of
 * patchSize * mergeSize (28 px), then scale so the area lies within [minPixels, maxPixels]. Defaults give
 * 4..64 embeddings per image (56x56 .. 224x224 px); a fixed 224x224 would waste rows on thin images and
 * distort them. The embedding count is therefore a function of the image's width and height alone, known
 * before anything is decoded beyond the header.
 *
 * Patches are ordered merge group by merge group (each run of mergeSize^2 patches is one square of the
 * grid, raster order inside), which is what lets the encoder's merge be a plain reshape.
 */
import type { ImagePatches } from './types.ts';
import type { RgbImage } from './image.ts';
import { mediaInvalid } from './mediaError.ts';
import { resizeBilinear } from './resizeBilinear.ts';

export interface ImageGridConfig {
  readonly patchSize: number;
  readonly mergeSize: number;
  readonly minPixels: number;
  readonly maxPixels: number;
}

export const DEFAULT_IMAGE_GRID: ImageGridConfig = {
  patchSize: 14,
  mergeSize: 2,
  minPixels: 56 * 56,
  maxPixels: 224 * 224,
};

/** CLIP's normalisation (OpenAI CLIP, also used by Qwen2-VL), per RGB channel of values in [0, 1]. */
export const CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073] as const;
export const CLIP_STD = [0.26862954, 0.26130258, 0.27577711] as const;
/** A 0-255 channel value v of channel c, CLIP-normalised: v * CLIP_SCALE[c] - CLIP_SHIFT[c]. */
export const CLIP_SCALE: readonly number[] = CLIP_STD.map((s) => 1 / (255 * s));
export const CLIP_SHIFT: readonly number[] = CLIP_MEAN.map((mean, c) => mean / CLIP_STD[c]);

/**
 * Walks a gridWidth x gridHeight grid of patches in the encoder's order (merge group by merge group, raster order
 * inside each), numbering them from `index`: records each patch's (row, col) in `positions` and hands it to `fill`,
 * which writes its pixels. Returns the number after the last patch.
 */
export function walkMergeGroups(
  gridWidth: number,
  gridHeight: number,
  mergeSize: number,
  positions: Int32Array,
  index: number,
  fill: (index: number, row: number, col: number) => void,
): number {
  const m = mergeSize;
  for (let gy = 0; gy < gridHeight; gy += m) {
    for (let gx = 0; gx < gridWidth; gx += m) {
      for (let dy = 0; dy < m; dy++) {
        for (let dx = 0; dx < m; dx++, index++) {
          positions[2 * index] = gy + dy;
          positions[2 * index + 1] = gx + dx;
          fill(index, gy + dy, gx + dx);
        }
      }
    }
  }
  return index;
}

/** Thinner than this is refused: one side would be a sliver of patches (Qwen2-VL's limit). */
export const MAX_ASPECT_RATIO = 200;

export interface ImageGrid {
  /** Resized size in pixels. */
  readonly width: number;
  readonly height: number;
  /** Size in patches. */
  readonly gridWidth: number;
  readonly gridHeight: number;
}

export function imageGrid(
  width: number,
  height: number,
  config: ImageGridConfig = DEFAULT_IMAGE_GRID,
  what = 'image',
): ImageGrid {
  if (!(width >= 1 && height >= 1)) throw mediaInvalid(what, `image is ${width}x${height}`);
  if (Math.max(width, height) / Math.min(width, height) > MAX_ASPECT_RATIO) {
    throw mediaInvalid(what, `image is ${width}x${height}; the aspect ratio must be at most ${MAX_ASPECT_RATIO}:1`);
  }
  const factor = config.patchSize * config.mergeSize;
  const snap = (v: number, round: (x: number) => number): number => Math.max(factor, round(v / factor) * factor);
  let h = snap(height, Math.round);
  let w = snap(width, Math.round);
  if (h * w > config.maxPixels) {
    const beta = Math.sqrt((height * width) / config.maxPixels);
    h = snap(height / beta, Math.floor);
    w = snap(width / beta, Math.floor);
  } else if (h * w < config.minPixels) {
    const beta = Math.sqrt(config.minPixels / (height * width));
    h = snap(height * beta, Math.ceil);
    w = snap(width * beta, Math.ceil);
  }
  // A very thin image can still exceed the area after its short side was raised to one factor.
  if (h * w > config.maxPixels) {
    if (h > w) h = snap(config.maxPixels / w, Math.floor);
    else w = snap(config.maxPixels / h, Math.floor);
  }
  return { width: w, height: h, gridWidth: w / config.patchSize, gridHeight: h / config.patchSize };
}

/** Embeddings the vision encoder produces for a width x height image. */
export function imageEmbeddingCount(
  width: number,
  height: number,
  config: ImageGridConfig = DEFAULT_IMAGE_GRID,
): number {
  const { gridWidth, gridHeight } = imageGrid(width, height, config);
  return (gridWidth * gridHeight) / (config.mergeSize * config.mergeSize);
}

export function imagePatches(
  image: RgbImage,
  config: ImageGridConfig = DEFAULT_IMAGE_GRID,
  what = 'image',
): ImagePatches {
  const grid = imageGrid(image.width, image.height, config, what);
  const pixels = resizeBilinear(image, grid.width, grid.height); // [h][w][3] in [0, 255]
  const { patchSize: p, mergeSize: m } = config;
  const patchDim = 3 * p * p;
  const numPatches = grid.gridWidth * grid.gridHeight;
  const patches = new Float32Array(numPatches * patchDim);
  const positions = new Int32Array(numPatches * 2);
  walkMergeGroups(grid.gridWidth, grid.gridHeight, m, positions, 0, (index, row, col) => {
    const base = index * patchDim;
    for (let c = 0; c < 3; c++) {
      for (let y = 0; y < p; y++) {
        const src = ((row * p + y) * grid.width + col * p) * 3 + c;
        const dst = base + (c * p + y) * p;
        for (let x = 0; x < p; x++) patches[dst + x] = pixels[src + 3 * x] * CLIP_SCALE[c] - CLIP_SHIFT[c];
      }
    }
  });
  return {
    modality: 'image',
    patches,
    positions,
    patchSize: p,
    mergeSize: m,
    gridHeight: grid.gridHeight,
    gridWidth: grid.gridWidth,
    numPatches,
    numEmbeddings: numPatches / (m * m),
  };
}
