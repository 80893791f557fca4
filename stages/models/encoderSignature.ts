/**
 * The I/O names of the encoders, shared by the generators and the runner (and what a bring-your-own
 * encoder ONNX must use). Kept apart from the generators so the runner does not load the ONNX builder.
 */

export const AUDIO_ENCODER_FILE = 'audio_encoder.onnx';
/**
 * input_features [B, numMelBins, frames] float32, attention_mask [B, frames] int64 -> audio_embeds [B, ceil(frames /
 * 4), D].
 */
export const AUDIO_ENCODER_INPUTS = { features: 'input_features', mask: 'attention_mask' } as const;
export const AUDIO_ENCODER_OUTPUT = 'audio_embeds';

export const VISION_ENCODER_FILE = 'vision_encoder.onnx';
/**
 * pixel_patches [B, N, 3 P P] float32, patch_position_ids [B, N, 2] int64, attention_mask [B, N] int64 -> image_embeds
 * [B, N / m^2, D].
 */
export const VISION_ENCODER_INPUTS = {
  patches: 'pixel_patches',
  positions: 'patch_position_ids',
  mask: 'attention_mask',
} as const;
export const VISION_ENCODER_OUTPUT = 'image_embeds';
