/**
 * The generated audio encoder (tiny-omni family), shaped like Whisper's encoder with a Qwen2-Audio style
 * projector: log-mel input_features [B, numMelBins, frames] (100 frames/s) and attention_mask [B, frames]
 * -> audio_embeds [B, ceil(frames / 4), outputSize] (25 per second).
 *
 * Two stride-2 convolutions (kernel 3, pad 1) take 100 frames/s to 25/s; a small bidirectional transformer
 * and a 2-layer MLP into the Thinker's width follow. Batching pads frames on the right; after each conv the
 * output is multiplied by the mask at that rate, so a padded position reads as the zero a conv's own
 * padding would give and the last real outputs are identical alone and in a batch.
 */
import { GraphBuilder } from './GraphBuilder.ts';
import { buildEncoderStack, keyAllowed, linear, silu, sinusoidCode } from './encoderStack.ts';
import type { AudioEncoderSize } from './encoderSizes.ts';
import { AUDIO_ENCODER_FILE, AUDIO_ENCODER_INPUTS, AUDIO_ENCODER_OUTPUT } from '../models/encoderSignature.ts';
import type { BuildProgressStep, BuiltFiles } from './thinkerModel.ts';
import { Weights, yieldToLoop } from './weights.ts';

const END = Number.MAX_SAFE_INTEGER; // Slice clamps ends to the dimension

export async function buildAudioEncoder(
  size: AudioEncoderSize,
  seed: number,
  progress: (s: BuildProgressStep) => void,
): Promise<BuiltFiles> {
  const { numMelBins: bins, hiddenSize: c, outputSize: d } = size;
  const total = size.numLayers + 2;
  const g = new GraphBuilder('audio_encoder');
  const w = new Weights(g, seed);
  g.input(AUDIO_ENCODER_INPUTS.features, 'float32', ['batch_size', bins, 'num_frames']);
  g.input(AUDIO_ENCODER_INPUTS.mask, 'int64', ['batch_size', 'num_frames']);
  g.output(AUDIO_ENCODER_OUTPUT, 'float32', ['batch_size', 'num_embeddings', d]);

  let mask = g.op('Cast', [AUDIO_ENCODER_INPUTS.mask], { to: 1 /* FLOAT */ }); // [B, T]
  let x: string = AUDIO_ENCODER_INPUTS.features;
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
  g.op('Identity', [linear(g, w, hidden, 'proj.1', d, d)], {}, AUDIO_ENCODER_OUTPUT);
  const bytes = g.toBytes('chorus tiny-omni audio encoder');
  progress({ done: total, total, what: 'audio encoder' });
  return { files: { [AUDIO_ENCODER_FILE]: bytes } };
}
