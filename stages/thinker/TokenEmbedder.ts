/**
 * Token ids -> input embedding rows, from an Optimum-style embed_tokens.onnx (input_ids -> inputs_embeds).
 * When that graph is a single Gather over a [V, D] float initializer (ours is; Optimum's usually are),
 * the table is read once and rows are gathered in JS: ~1 us instead of a session run per call, which
 * matters because the Thinker core embeds every emitted token for the Talker. Any other graph runs as a session.
 */
import { readFileSync, statSync } from 'node:fs';
import * as ort from 'onnxruntime-node';
import onnxProto from 'onnx-proto';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { SyncSession } from '../models/SyncSession.ts';

const { onnx } = onnxProto;
const MAX_DECODE_BYTES = 512 * 1024 * 1024; // beyond this, let onnxruntime hold the table instead of a JS copy

export interface TokenEmbedder {
  readonly hiddenSize: number;
  embed(tokenIds: readonly number[]): Float32Array;
  close(): void;
}

function checkIds(tokenIds: readonly number[], vocabSize: number): void {
  for (const id of tokenIds) {
    if (!Number.isInteger(id) || id < 0 || id >= vocabSize) {
      throw new ChorusError(ErrorCodes.REQUEST_INVALID, `token id ${id} is outside the vocabulary [0, ${vocabSize})`);
    }
  }
}

class TableEmbedder implements TokenEmbedder {
  constructor(
    private readonly table: Float32Array,
    private readonly vocabSize: number,
    readonly hiddenSize: number,
  ) {}

  embed(tokenIds: readonly number[]): Float32Array {
    checkIds(tokenIds, this.vocabSize);
    const d = this.hiddenSize;
    const out = new Float32Array(tokenIds.length * d);
    tokenIds.forEach((id, i) => out.set(this.table.subarray(id * d, (id + 1) * d), i * d));
    return out;
  }

  close(): void {}
}

class SessionEmbedder implements TokenEmbedder {
  constructor(
    private readonly session: SyncSession,
    readonly hiddenSize: number,
  ) {}

  embed(tokenIds: readonly number[]): Float32Array {
    if (tokenIds.length === 0) return new Float32Array(0);
    const ids = new ort.Tensor(
      'int64',
      BigInt64Array.from(tokenIds, (id) => BigInt(id)),
      [1, tokenIds.length],
    );
    return this.session.run({ input_ids: ids }, ['inputs_embeds']).inputs_embeds.data as Float32Array;
  }

  close(): void {
    this.session.close();
  }
}

/** The [V, D] table when the graph is exactly `inputs_embeds = Gather(table, input_ids)`, else null. */
function gatherTable(bytes: Uint8Array): { table: Float32Array; vocabSize: number; hiddenSize: number } | null {
  const graph = onnx.ModelProto.decode(bytes).graph;
  const nodes = graph?.node ?? [];
  if (nodes.length !== 1 || nodes[0].opType !== 'Gather') return null;
  const [tableName, idsName] = nodes[0].input ?? [];
  const init = (graph?.initializer ?? []).find((t) => t.name === tableName);
  const dims = (init?.dims ?? []).map(Number);
  if (!init || idsName !== 'input_ids' || init.dataType !== onnx.TensorProto.DataType.FLOAT || dims.length !== 2)
    return null;
  const [vocabSize, hiddenSize] = dims;
  const floatData = init.floatData ?? [];
  let table: Float32Array;
  if (init.rawData && init.rawData.byteLength === vocabSize * hiddenSize * 4) {
    table = new Float32Array(vocabSize * hiddenSize);
    new Uint8Array(table.buffer).set(init.rawData); // copy: rawData may be unaligned inside the file buffer
  } else if (floatData.length === vocabSize * hiddenSize) {
    table = Float32Array.from(floatData);
  } else {
    return null;
  }
  return { table, vocabSize, hiddenSize };
}

export function loadTokenEmbedder(path: string, sessionOptions: object): TokenEmbedder {
  try {
    if (statSync(path).size <= MAX_DECODE_BYTES) {
      const found = gatherTable(readFileSync(path));
      if (found) return new TableEmbedder(found.table, found.vocabSize, found.hiddenSize);
    }
  } catch (err) {
    throw new ChorusError(ErrorCodes.MODEL_LOAD, `cannot read embedding model ${path}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const session = SyncSession.create(path, sessionOptions);
  const ids = session.inputMetadata.find((m) => m.name === 'input_ids');
  const out = session.outputMetadata.find((m) => m.name === 'inputs_embeds');
  const dim = out?.shape[2];
  if (!ids || !out || typeof dim !== 'number') {
    session.close();
    throw new ChorusError(
      ErrorCodes.MODEL_SIGNATURE,
      `embedding model ${path} must map input_ids [B, S] to inputs_embeds [B, S, D] with a fixed D`,
    );
  }
  return new SessionEmbedder(session, dim);
}
