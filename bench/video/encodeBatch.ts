/**
 * What batching pays the vision encoder on this CPU (issue 44: "batched where batching pays"): the same items encoded
 * one run each and in runs of `batch` (padded to the longest, as the encoder stage runs them), in one process on one
 * thread like a stage; per item, medians over the rounds. Items: a 224 x 224 image (256 patches) and clips of 4, 8
 * and 16 frames of 252 x 168 (432, 864, 1,728 patches), the model tiny-omni's image encoder.
 *
 *   npx tsx bench/video/encodeBatch.ts [--rounds 5] [--batch 4] [--config configs/tiny-omni.yaml]
 */
import { createEncoderRunner, parseConfig, type StageSpec } from '../../src/index.ts';
import { readFileSync } from 'node:fs';
import { gitSha, median } from '../common.ts';
import { pipelineFlags } from '../scriptFlags.ts';

const { rounds, batch, config } = pipelineFlags({ rounds: 5, batch: 4 });

const graph = parseConfig(readFileSync(config, 'utf8'), config);
const spec = graph.stages.find((s: StageSpec) => s.encoder?.imageGrid) as StageSpec;
const model = spec.model;
if (model.source !== 'generated' || model.kind !== 'vision_encoder')
  throw new Error('needs a generated vision encoder');
const { patchSize, mergeSize } = model.size;
const runner = await createEncoderRunner(model, graph.modelsDir, { engine: { threads: 1 } });
type Item = Parameters<typeof runner.encode>[0][number];

/** An image-shaped item of gridHeight x gridWidth patches (a clip's temporal groups stacked as rows). */
function item(gridHeight: number, gridWidth: number, seed: number): Item {
  const numPatches = gridHeight * gridWidth;
  const patches = Float32Array.from({ length: numPatches * 3 * patchSize * patchSize }, (_, i) =>
    Math.sin(i * 0.37 + seed),
  );
  const positions = Int32Array.from({ length: numPatches * 2 }, (_, i) =>
    i % 2 === 0 ? Math.floor(i / 2 / gridWidth) : (i >> 1) % gridWidth,
  );
  const numEmbeddings = numPatches / (mergeSize * mergeSize);
  return {
    modality: 'image',
    patches,
    positions,
    patchSize,
    mergeSize,
    gridHeight,
    gridWidth,
    numPatches,
    numEmbeddings,
  };
}

const timed = (items: readonly Item[]) => {
  const t = performance.now();
  runner.encode(items);
  return performance.now() - t;
};

const shapes = [
  { name: 'image 224x224', h: 16, w: 16 },
  { name: 'clip 4 frames 252x168', h: 2 * 12, w: 18 },
  { name: 'clip 8 frames 252x168', h: 4 * 12, w: 18 },
  { name: 'clip 16 frames 252x168', h: 8 * 12, w: 18 },
];
console.log(`encodeBatch at ${gitSha()}: ${rounds} rounds, runs of ${batch}, one thread`);
for (const s of shapes) {
  const items = Array.from({ length: batch }, (_, k) => item(s.h, s.w, k));
  timed(items.slice(0, 1)); // warm-up at this shape
  const alone: number[] = [];
  const together: number[] = [];
  for (let r = 0; r < rounds; r++) {
    alone.push(items.reduce((ms, it) => ms + timed([it]), 0) / batch);
    together.push(timed(items) / batch);
  }
  const a = median(alone);
  const b = median(together);
  const patches = s.h * s.w;
  console.log(
    `${s.name} (${patches} patches): alone ${a.toFixed(1)} ms/item, in runs of ${batch} ${b.toFixed(1)} ms/item, ` +
      `batched/alone ${(b / a).toFixed(2)}`,
  );
}
await runner.close();
