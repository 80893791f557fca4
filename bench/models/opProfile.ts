/**
 * `node --import tsx bench/models/opProfile.ts MODEL.onnx [--batch 10] [--past 200] [--new 1] [--runs 50] [--top 15]`
 * — where one model step spends its time, operator by operator: onnxruntime's own profiler (enableProfiling) over
 * `--runs` runs of the file with the stage's session options, inputs made from its signature (symbolic dimensions:
 * batch_size = --batch, sequence_length = --new, past_sequence_length = --past, total_sequence_length = past + new;
 * attention masks of ones, other integers 0, floats 0.01). Prints ms per run by operator type, then the slowest
 * nodes with their input shapes. Found the KV Concat's share of a Talker step and the heads' share of a prefill
 * (bench/README.md, "Repacks from a buffer pool").
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import { sessionOptions } from '../../stages/models/SyncSession.ts';

const { values, positionals } = parseArgs({
  options: {
    batch: { type: 'string', default: '10' },
    past: { type: 'string', default: '200' },
    new: { type: 'string', default: '1' },
    runs: { type: 'string', default: '50' },
    top: { type: 'string', default: '15' },
  },
  allowPositionals: true,
});
const file = positionals[0];
if (!file) throw new Error('give the model file: bench/models/opProfile.ts MODEL.onnx');
const [batch, past, fresh, runs] = [values.batch, values.past, values.new, values.runs].map(Number);
const dims: Record<string, number> = {
  batch_size: batch,
  sequence_length: fresh,
  past_sequence_length: past,
  total_sequence_length: past + fresh,
};

interface ProfileEvent {
  readonly cat: string;
  readonly name: string;
  readonly dur: number;
  readonly args?: { readonly op_name?: string; readonly input_type_shape?: Record<string, number[]>[] };
}

const dir = mkdtempSync(path.join(tmpdir(), 'chorus-opprofile-'));
try {
  const session = await ort.InferenceSession.create(file, {
    ...sessionOptions({ threads: 1 }),
    enableProfiling: true,
    profileFilePrefix: path.join(dir, 'ort'),
  });
  const feeds: Record<string, ort.Tensor> = {};
  for (const meta of session.inputMetadata) {
    if (!meta.isTensor) throw new Error(`input ${meta.name} is not a tensor`);
    const shape = meta.shape.map((d) => (typeof d === 'number' ? d : (dims[d] ?? 1)));
    const n = shape.reduce((a, b) => a * b, 1);
    feeds[meta.name] =
      meta.type === 'int64'
        ? new ort.Tensor('int64', new BigInt64Array(n).fill(meta.name === 'attention_mask' ? 1n : 0n), shape)
        : new ort.Tensor('float32', new Float32Array(n).fill(0.01), shape);
  }
  for (let i = 0; i < runs; i++) await session.run(feeds);
  session.endProfiling();
  await session.release();
  const written = readdirSync(dir).find((f) => f.endsWith('.json'));
  if (!written) throw new Error(`onnxruntime wrote no profile in ${dir}`);
  const events = (JSON.parse(readFileSync(path.join(dir, written), 'utf8')) as ProfileEvent[]).filter(
    (e) => e.cat === 'Node' && e.name.endsWith('_kernel_time'),
  );
  const byOp = new Map<string, number>();
  const byNode = new Map<string, number>();
  let total = 0;
  for (const e of events) {
    const op = e.args?.op_name ?? '?';
    const shapes = (e.args?.input_type_shape ?? []).map((o) => `[${Object.values(o)[0]?.join(',')}]`).join(' ');
    byOp.set(op, (byOp.get(op) ?? 0) + e.dur);
    const node = `${e.name.replace(/_kernel_time$/, '')} ${op} ${shapes}`;
    byNode.set(node, (byNode.get(node) ?? 0) + e.dur);
    total += e.dur;
  }
  const perRun = (us: number) => (us / runs / 1000).toFixed(3);
  const top = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top));
  process.stdout.write(`${file}: batch ${batch}, past ${past}, new ${fresh}; ${perRun(total)} ms of kernels per run\n`);
  for (const [op, us] of top(byOp)) {
    process.stdout.write(`  ${op.padEnd(22)} ${perRun(us).padStart(8)} ms  ${((100 * us) / total).toFixed(1)}%\n`);
  }
  process.stdout.write('slowest nodes:\n');
  for (const [node, us] of top(byNode)) process.stdout.write(`  ${perRun(us).padStart(8)} ms  ${node}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
