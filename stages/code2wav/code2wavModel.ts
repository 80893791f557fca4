/**
 * The generated Code2Wav: codes [B, Q, T] int64 -> audio [B, 1, T * samplesPerFrame] float32 in [-1, 1].
 * Summed codebook embeddings -> numLayers causal residual convolutions over frames -> a per-frame Linear
 * to samplesPerFrame samples -> tanh.
 *
 * Causality is what makes streaming exact: each Conv pads (kernelSize - 1) frames on the LEFT only, so
 * output frame t depends on input frames t - receptiveField .. t and nothing later. A streamed chunk with
 * at least receptiveFieldFrames of left context therefore reproduces the offline decode, and right-padding
 * a batch cannot change any earlier sample.
 *
 * With size.streamingState the graph is the streaming variant: each causal Conv takes its (kernelSize - 1)
 * frames of left context as an input, `past_state.{l}` [B, D, kernelSize - 1] (zeros before the first frame,
 * which is exactly the Conv's left padding), and returns the context for the next call as
 * `present_state.{l}`: the last (kernelSize - 1) frames of [past, input] before each row's `num_frames`
 * [B] (rows of a batch are right-padded to one length; the state must end at the row's own last frame).
 * A runner that feeds each request's present back as its past decodes every frame once; the stateless
 * graph needs the receptive field again as left context with every chunk.
 *
 * The per-frame Linear is a mix of sinusoids whose frequencies are multiples of the frame rate, so each
 * basis is periodic over one frame and joins its neighbour without a phase jump: the dummy model hums
 * rather than hisses.
 */
import type { Code2WavSize } from '../../src/common/modelSpec.ts';
import { GraphBuilder } from '../generator/GraphBuilder.ts';
import type { ModelGenerator } from '../models/modelCache.ts';
import { Weights, randomUniform, yieldToLoop } from '../generator/weights.ts';

const NUM_SINUSOIDS = 24;
const LOWEST_HARMONIC = 8; // 8 * 12.5 Hz = 100 Hz at 1920 samples per frame
const PRE_TANH_STD = 0.5; // keeps tanh mostly linear: audio peaks well inside [-1, 1]

export function code2wavReceptiveFieldFrames(size: Pick<Code2WavSize, 'numLayers' | 'kernelSize'>): number {
  return size.numLayers * (size.kernelSize - 1);
}

export const buildCode2Wav: ModelGenerator<Code2WavSize> = async (size, seed, progress) => {
  const { numCodebooks: q, codebookSize: k, hiddenSize: d, kernelSize, samplesPerFrame: spf } = size;
  const total = size.numLayers + 1;
  const g = new GraphBuilder('code2wav');
  const w = new Weights(g, seed);
  g.input('codes', 'int64', ['batch_size', q, 'num_frames']);
  g.output('audio', 'float32', ['batch_size', 1, 'num_samples']);
  const state = size.streamingState && kernelSize > 1 ? declareState(g, size) : null;

  const offsets = g.constI64(
    Array.from({ length: q }, (_, i) => i * k),
    [1, q, 1],
  );
  const table = w.uniform('code_embed.weight', [q * k, d], 1 / Math.sqrt(q));
  const rows = g.op('Gather', [table, g.op('Add', ['codes', offsets])], { axis: 0 }); // [B, Q, T, D]
  // [B, D, T]
  let x = g.op('Transpose', [g.op('ReduceSum', [rows, g.constI64([1])], { keepdims: 0 })], { perm: [0, 2, 1] });

  for (let l = 0; l < size.numLayers; l++) {
    const weight = w.uniform(`convs.${l}.weight`, [d, d, kernelSize], 1 / Math.sqrt(d * kernelSize));
    const bias = w.fill(`convs.${l}.bias`, [d], 0);
    const y = state
      ? g.op('Conv', [state.carry(l, x), weight, bias], { kernel_shape: [kernelSize] })
      : g.op('Conv', [x, weight, bias], { kernel_shape: [kernelSize], pads: [kernelSize - 1, 0] });
    x = g.op('Add', [x, g.op('Mul', [y, g.op('Sigmoid', [y])])]);
    progress({ done: l + 1, total, what: `conv ${l}` });
    await yieldToLoop();
  }

  const frames = g.op('Transpose', [x], { perm: [0, 2, 1] }); // [B, T, D]
  const normed = g.op('LayerNormalization', [frames, w.fill('ln.weight', [d], 1), w.fill('ln.bias', [d], 0)], {
    axis: -1,
    epsilon: { f: 1e-5 },
  });
  const wave = g.op('MatMul', [normed, w.data('upsample.weight', [d, spf], sinusoidMix(seed, d, spf))]);
  g.op('Reshape', [g.op('Tanh', [wave]), g.constI64([0, 1, -1])], {}, 'audio');
  const bytes = g.toBytes('chorus tiny-omni code2wav');
  progress({ done: total, total, what: 'code2wav' });
  return { files: { 'code2wav.onnx': bytes } };
};

/**
 * The state inputs and outputs, and `carry(l, x)`: layer l's input with its past prepended ([B, D, S + T], S =
 * kernelSize - 1), whose frames [num_frames, num_frames + S) of each row become present_state.{l}.
 */
function declareState(g: GraphBuilder, size: Code2WavSize): { carry(layer: number, x: string): string } {
  const contextFrames = size.kernelSize - 1;
  const dims = ['batch_size', size.hiddenSize, contextFrames];
  g.input('num_frames', 'int64', ['batch_size']);
  for (let l = 0; l < size.numLayers; l++) {
    g.input(`past_state.${l}`, 'float32', dims);
    g.output(`present_state.${l}`, 'float32', dims);
  }
  // Gather indices [B, D, S]: row b takes positions num_frames[b] + 0..S-1 of the concatenated sequence.
  const starts = g.op('Unsqueeze', ['num_frames', g.constI64([1, 2])]); // [B, 1, 1]
  const positions = g.op('Add', [starts, g.constI64(range(contextFrames), [1, 1, contextFrames])]);
  const indices = g.op('Expand', [positions, g.op('Shape', ['past_state.0'])]);
  return {
    carry(layer, x) {
      const joined = g.op('Concat', [`past_state.${layer}`, x], { axis: 2 });
      g.op('GatherElements', [joined, indices], { axis: 2 }, `present_state.${layer}`);
      return joined;
    },
  };
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

/** [d, spf]: each channel a random mix of NUM_SINUSOIDS frame-periodic sinusoids. */
function sinusoidMix(seed: number, d: number, spf: number): Float32Array {
  // Pre-tanh variance = d (unit-variance LayerNorm input) * NUM_SINUSOIDS * amp^2 / 2.
  const amp = PRE_TANH_STD / Math.sqrt((d * NUM_SINUSOIDS) / 2);
  const mix = randomUniform(seed, 'upsample.mix', d * NUM_SINUSOIDS, amp);
  const phases = randomUniform(seed, 'upsample.phase', NUM_SINUSOIDS, 1);
  const basis = new Float32Array(NUM_SINUSOIDS * spf);
  for (let j = 0; j < NUM_SINUSOIDS; j++) {
    const harmonic = LOWEST_HARMONIC + 3 * j;
    const phase = phases[j] * Math.PI;
    for (let n = 0; n < spf; n++) basis[j * spf + n] = Math.sin((2 * Math.PI * harmonic * n) / spf + phase);
  }
  const out = new Float32Array(d * spf);
  for (let c = 0; c < d; c++) {
    const row = out.subarray(c * spf, (c + 1) * spf);
    for (let j = 0; j < NUM_SINUSOIDS; j++) {
      const a = mix[c * NUM_SINUSOIDS + j];
      const b = basis.subarray(j * spf, (j + 1) * spf);
      for (let n = 0; n < spf; n++) row[n] += a * b[n];
    }
  }
  return out;
}
