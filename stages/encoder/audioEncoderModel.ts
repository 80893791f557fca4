/**
 * The generated audio encoder (tiny-omni family), shaped like Whisper's encoder with a Qwen2-Audio style
 * projector: log-mel input_features [B, numMelBins, frames] (100 frames/s) and attention_mask [B, frames]
 * -> audio_embeds [B, ceil(frames / 4), outputSize] (25 per second).
 *
 * Two stride-2 convolutions (kernel 3, pad 1) take 100 frames/s to 25/s; a small bidirectional transformer
 * and a 2-layer MLP into the Thinker's width follow. Batching pads frames on the right; after each conv the
 * output is multiplied by the mask at that rate, so a padded position reads as the zero a conv's own
 * padding would give and the last real outputs are identical alone and in a batch.
 *
 * Windowed (generator version 2), as Qwen2.5-Omni's audio encoder chunks its input by n_window: the frames are
 * cut into windows of AUDIO_ENCODER_WINDOW_FRAMES (the last one zero-padded and masked), and each window goes
 * through the convolutions and the transformer on its own (the windows become batch rows), so a row depends on
 * the frames of its own window only. That is what lets speech be encoded while it is spoken: the rows of a
 * window are the same whether the clip ends right after it or minutes later (OnnxEncoderRunner caches them per
 * window). Positions restart in every window.
 */
import { GraphBuilder } from '../generator/GraphBuilder.ts';
import { buildEncoderStack, keyAllowed, linear, silu, sinusoidCode } from './encoderStack.ts';
import type { AudioEncoderSize } from './encoderSizes.ts';
import { AUDIO_ENCODER_FILE, AUDIO_ENCODER_INPUTS, AUDIO_ENCODER_OUTPUT } from '../models/encoderSignature.ts';
import type { ModelGenerator } from '../models/modelCache.ts';
import { Weights, yieldToLoop } from '../generator/weights.ts';

const END = Number.MAX_SAFE_INTEGER; // Slice clamps ends to the dimension

/**
 * Mel frames per attention window: 0.64 s, 16 rows. Short, so the part of a turn left to encode when the user
 * stops speaking is short; a multiple of AUDIO_FRAMES_PER_EMBEDDING, so windows cut at row boundaries.
 */
export const AUDIO_ENCODER_WINDOW_FRAMES = 64;

export const buildAudioEncoder: ModelGenerator<AudioEncoderSize> = async (size, seed, progress) => {
  const { numMelBins: bins, hiddenSize: c, outputSize: d } = size;
  const total = size.numLayers + 2;
  const g = new GraphBuilder('audio_encoder');
  const w = new Weights(g, seed);
  g.input(AUDIO_ENCODER_INPUTS.features, 'float32', ['batch_size', bins, 'num_frames']);
  g.input(AUDIO_ENCODER_INPUTS.mask, 'int64', ['batch_size', 'num_frames']);
  g.output(AUDIO_ENCODER_OUTPUT, 'float32', ['batch_size', 'num_embeddings', d]);

  const win = AUDIO_ENCODER_WINDOW_FRAMES;
  // Pad the frames to whole windows: pad = (win - T % win) % win, then [B, bins, T'] -> [B * n, bins, win].
  const inputShape = g.op('Shape', [AUDIO_ENCODER_INPUTS.features]);
  const numFrames = g.op('Gather', [inputShape, g.constI64([2])], { axis: 0 }); // [1]
  const winConst = g.constI64([win]);
  const pad = g.op('Mod', [g.op('Sub', [winConst, g.op('Mod', [numFrames, winConst])]), winConst]);
  const padded = g.op('Pad', [
    AUDIO_ENCODER_INPUTS.features,
    g.op('Concat', [g.constI64([0, 0, 0, 0, 0]), pad], { axis: 0 }),
  ]);
  const windows = g.op('Reshape', [
    g.op('Transpose', [g.op('Reshape', [padded, g.constI64([0, 0, -1, win])])], { perm: [0, 2, 1, 3] }),
    g.constI64([-1, bins, win]),
  ]);
  const floatMask = g.op('Cast', [AUDIO_ENCODER_INPUTS.mask], { to: 1 /* FLOAT */ }); // [B, T]
  let mask = g.op('Reshape', [
    g.op('Pad', [floatMask, g.op('Concat', [g.constI64([0, 0, 0]), pad], { axis: 0 })]),
    g.constI64([-1, win]),
  ]); // [B * n, win]
  let x: string = windows;
  let inChannels = bins;
  for (let i = 0; i < 2; i++) {
    // two stride-2 convs: AUDIO_FRAMES_PER_EMBEDDING (encoderSizes.ts) = 4
    const weight = w.uniform(`conv${i}.weight`, [c, inChannels, 3], 1 / Math.sqrt(inChannels * 3));
    const y = g.op('Conv', [x, weight, w.fill(`conv${i}.bias`, [c], 0)], {
      kernel_shape: [3],
      strides: [2],
      pads: [1, 1],
    });
    // ceil(T / 2) positions, exactly what a step-2 slice of the mask keeps: position t reads frame 2t.
    mask = g.op('Slice', [mask, g.constI64([0]), g.constI64([END]), g.constI64([1]), g.constI64([2])]);
    x = g.op('Mul', [silu(g, y), g.op('Unsqueeze', [mask, g.constI64([1])])]);
    inChannels = c;
  }
  progress({ done: 1, total, what: 'convs' });
  await yieldToLoop();

  const seq = g.op('Transpose', [x], { perm: [0, 2, 1] }); // [B, T/4, C]
  const positions = g.op(
    'Cast',
    [
      g.op('Range', [
        g.constI64([0], []),
        g.op('Gather', [g.op('Shape', [seq]), g.constI64([1], [])], { axis: 0 }),
        g.constI64([1], []),
      ]),
    ],
    { to: 1 },
  );
  const embedded = g.op('Add', [seq, sinusoidCode(g, positions, c)]);
  const normed = await buildEncoderStack(g, w, embedded, keyAllowed(g, mask), size, async (l) => {
    progress({ done: 2 + l, total, what: `layer ${l}` });
    await yieldToLoop();
  });
  const hidden = silu(g, linear(g, w, normed, 'proj.0', c, d));
  // [B * n, win / 4, d] -> [B, n * win / 4, d]: the windows' rows back in order (the runner drops padded rows).
  const batch = g.op('Gather', [inputShape, g.constI64([0])], { axis: 0 });
  const outShape = g.op('Concat', [batch, g.constI64([-1, d])], { axis: 0 });
  g.op('Reshape', [linear(g, w, hidden, 'proj.1', d, d), outShape], {}, AUDIO_ENCODER_OUTPUT);
  const bytes = g.toBytes('chorus tiny-omni audio encoder');
  progress({ done: total, total, what: 'audio encoder' });
  return { files: { [AUDIO_ENCODER_FILE]: bytes } };
};
