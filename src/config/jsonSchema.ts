/**
 * The stage graph's YAML schema as JSON Schema (configs/schema.json), for editors: `# yaml-language-server:
 * $schema=./schema.json` at the top of a config gives validation and completion while typing. Built from the
 * loader's own TypeBox schemas, so the two cannot drift (a test compares the shipped file with this); the model
 * section gets each kind's schema (the loader checks it once the kind is known), and keys the loader refuses with
 * a message of its own (worker_type, next_stage_processor) are left out, so an editor refuses them too.
 */
import type { TSchema } from '@sinclair/typebox';
import { stageKinds } from '../../stages/registry.ts';
import { connectorKinds } from '../../transport/registry.ts';
import { FileModelYaml, GgufModelYaml, GraphYaml } from './schema.ts';

type Json = Record<string, unknown>;

/** JSON of a TypeBox schema: its symbol-keyed metadata dropped, `errorMessage` kept as a description. */
function plain(schema: TSchema): Json {
  return JSON.parse(JSON.stringify(schema)) as Json;
}

export function stageGraphJsonSchema(): Json {
  const root = plain(GraphYaml);
  const props = root.properties as Record<string, Json>;
  const stage = (props.stages as { items: Json }).items;
  const stageProps = stage.properties as Record<string, Json>;
  delete stageProps.worker_type;
  delete stageProps.next_stage_processor;
  const models = [plain(FileModelYaml), plain(GgufModelYaml)];
  for (const d of Object.values(stageKinds)) {
    const variants = d.readsRequest ? [d.modelSchema('audio'), d.modelSchema('image')] : [d.modelSchema(undefined)];
    for (const v of variants) models.push(plain(v));
  }
  stageProps.model = {
    description:
      'a file model ({path, tokenizer}), a GGUF LLM ({gguf}) or a generated one (preset, seed and size overrides of ' +
      'its kind)',
    anyOf: models,
  };
  // TypeBox writes a Record as patternProperties; one pattern, every connector name.
  const connectors = props.connectors as { patternProperties: Record<string, Json> };
  const connector = Object.values(connectors.patternProperties)[0].properties as Record<string, Json>;
  connector.kind = { type: 'string', enum: Object.keys(connectorKinds) };
  connector.options = { anyOf: Object.values(connectorKinds).map((k) => plain(k.optionsSchema)) };
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $id: 'https://chorus.dev/schema/stage-graph.json',
    title: 'Chorus stage graph',
    ...root,
  };
}
