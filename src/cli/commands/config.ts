/**
 * `chorus config check FILE`: validates a stage graph and prints what it resolved to (stages in start
 * order, edges, connectors, model sizes) plus warnings. Exit 0 when valid, 1 with every problem listed.
 */
import { verbCommandArgs } from '../commandFlags.ts';
import { defaultConfigPath } from '../../config/paths.ts';
import type { ModelSpec } from '../../common/modelSpec.ts';
import type { StageGraph } from '../../common/graph.ts';
import { isChorusError } from '../../common/errors.ts';

export const usage = `usage: chorus config check [FILE] [--json]
       chorus config schema

check    validates a stage-graph YAML (default: configs/tiny-omni.yaml) and prints the resolved graph
         --json    print the resolved graph as JSON instead of a summary
schema   prints the stage graph's JSON Schema (configs/schema.json is this output; editors use it)
`;

export async function run(argv: string[]): Promise<number> {
  const parsed = verbCommandArgs('config', argv, { json: { type: 'boolean' } }, usage);
  if (typeof parsed === 'number') return parsed;
  const [verb, file, ...extra] = parsed.positionals;
  // The config's modules (its schema, every stage kind's rules) load once the command line is checked: --help and a
  // bad flag answer without them.
  if (verb === 'schema' && file === undefined) {
    const { stageGraphJsonSchema } = await import('../../config/jsonSchema.ts');
    process.stdout.write(`${JSON.stringify(stageGraphJsonSchema(), null, 2)}\n`);
    return 0;
  }
  if (verb !== 'check' || extra.length > 0) {
    process.stderr.write(
      verb === undefined ? usage : `chorus config: unexpected "${verb === 'check' ? extra[0] : verb}"\n\n${usage}`,
    );
    return 2;
  }
  const { loadConfig } = await import('../../config/loadConfig.ts');
  let graph: StageGraph;
  try {
    graph = await loadConfig(file ?? defaultConfigPath());
  } catch (err) {
    if (!isChorusError(err)) throw err;
    process.stderr.write(`${err.message}\n`);
    return 1;
  }
  // Connector passwords (redis) never reach the terminal or a pasted log.
  const masked = (key: string, value: unknown) => (key === 'password' ? '***' : value);
  process.stdout.write(parsed.values.json ? `${JSON.stringify(graph, masked, 2)}\n` : summary(graph));
  return 0;
}

export function summary(graph: StageGraph): string {
  const lines = [
    `${graph.file}: OK`,
    `  async_chunk: ${graph.asyncChunk}`,
    `  scheduling: ${graph.scheduling}`,
    `  routing: ${graph.routing}`,
    `  models_dir: ${graph.modelsDir}`,
  ];
  const cp = graph.chunkPolicy;
  const initial =
    cp.initialCodecChunkFrames !== null
      ? `${cp.initialCodecChunkFrames} frames`
      : cp.dynamicInitialChunk
        ? 'sized from load'
        : `${cp.codecChunkFrames} frames (= codec_chunk_frames)`;
  lines.push(
    `  chunk_policy: first chunk ${initial}, then ${cp.codecChunkFrames} frames + ${cp.codecLeftContextFrames} ` +
      `context, timeout ${cp.chunkTimeoutMs} ms` +
      (cp.ttfpTargetMs !== null ? `, default TTFP target ${cp.ttfpTargetMs} ms` : ''),
    '',
    'connectors:',
  );
  for (const c of Object.values(graph.connectors)) {
    const options = Object.entries(c.options)
      .map(([k, v]) => `${k}=${k === 'password' ? '***' : String(v)}`)
      .join(' ');
    lines.push(`  ${c.name.padEnd(12)} ${c.kind.padEnd(7)} ${options}`);
  }
  lines.push('', 'stages (start order):');
  for (const s of graph.stages) {
    const output = s.finalOutput ? `final ${s.finalOutputType}` : 'internal';
    const entry = s.stageId === graph.entryStageId ? ' [entry]' : '';
    lines.push(
      `  ${s.stageId.padEnd(12)} ${s.kind.padEnd(8)} ${s.workerType.padEnd(10)} ${output.padEnd(11)} threads ` +
        `${s.engine.threads} x ${s.replicas} replica(s)${entry}`,
      `  ${''.padEnd(12)} model: ${describeModel(s.model)}`,
    );
  }
  lines.push('', 'edges:');
  const edges = graph.stages.flatMap((s) => s.inputs.map((i) => ({ to: s, ...i })));
  if (edges.length === 0) lines.push('  (none)');
  for (const e of edges) {
    const from = graph.stages.find((s) => s.stageId === e.from)?.kind ?? '?';
    lines.push(`  ${e.from} -> ${e.to.stageId} over ${e.connector} (${from} -> ${e.to.kind})`);
  }
  const warnings = graph.warnings ?? [];
  if (warnings.length > 0) lines.push('', 'warnings:', ...warnings.map((w) => `  ${w}`));
  return `${lines.join('\n')}\n`;
}

function describeModel(model: ModelSpec): string {
  if (model.source === 'file') return `file ${model.path}${model.tokenizer ? `, tokenizer ${model.tokenizer}` : ''}`;
  const sizes = Object.entries(model.size)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  return `generated ${model.preset} seed ${model.seed}: ${sizes}`;
}
