/**
 * Reads a Piper voice's ONNX graph once at load and exposes its durations: the one `Ceil` node of a VITS export is
 * the per-phoneme-id frame counts (`w_ceil`, [batch, 1, phonemeIds], zero past an item's length). Marked as a graph
 * output, it tells how many samples of a padded batch row are the item's own (frames * hop length), which the audio
 * output alone does not: its rows all have the longest item's length. The graph is patched in memory and handed to
 * onnxruntime as bytes; the file is never written.
 */
import { readFileSync } from 'node:fs';
import onnxProto from 'onnx-proto';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';

const { onnx } = onnxProto;

export interface PiperGraph {
  /** The model, with the durations output added when one was found. */
  readonly bytes: Uint8Array;
  /** The durations tensor's name, or null (no single Ceil node: each item then runs alone, unpadded). */
  readonly durationsOutput: string | null;
}

export function readPiperGraph(path: string): PiperGraph {
  let model: InstanceType<typeof onnx.ModelProto>;
  const file = readFileSync(path);
  try {
    model = onnx.ModelProto.decode(file);
  } catch (err) {
    throw new ChorusError(ErrorCodes.MODEL_LOAD, `${path} is not an ONNX model: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const graph = model.graph;
  if (!graph) throw new ChorusError(ErrorCodes.MODEL_LOAD, `${path} has no graph`);
  const ceils = (graph.node ?? []).filter((n) => n.opType === 'Ceil').flatMap((n) => n.output ?? []);
  if (ceils.length !== 1) return { bytes: file, durationsOutput: null };
  const [name] = ceils;
  if (!(graph.output ?? []).some((o) => o.name === name)) {
    graph.output = [...(graph.output ?? []), onnx.ValueInfoProto.create({ name })];
  }
  return { bytes: onnx.ModelProto.encode(model).finish(), durationsOutput: name };
}
