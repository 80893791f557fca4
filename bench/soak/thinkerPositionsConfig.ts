/**
 * A copy of a config whose Thinker has `max_positions` positions, so a soak reaches session.truncation within a
 * bounded run (tiny-omni's 4096 take ~60 turns of 60 positions to fill; 1024 take ~15). Written to a temporary
 * folder, the copy's relative paths (models_dir, a stage's model path and tokenizer) are made absolute against
 * the original's folder: they must name the same files from there.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isMap, isSeq, parseDocument, type YAMLMap } from 'yaml';
import { ChorusError, ErrorCodes } from '../../src/basics.ts';

export interface TempConfig {
  readonly file: string;
  remove(): void;
}

export function thinkerPositionsConfig(config: string, maxPositions: number): TempConfig {
  const baseDir = path.dirname(path.resolve(config));
  const doc = parseDocument(readFileSync(config, 'utf8'));
  const absolute = (node: YAMLMap, key: string) => {
    const value = node.get(key);
    if (typeof value === 'string') node.set(key, path.resolve(baseDir, value));
  };
  if (isMap(doc.contents)) absolute(doc.contents, 'models_dir');
  const stages = doc.get('stages');
  let thinkers = 0;
  for (const stage of isSeq(stages) ? stages.items : []) {
    if (!isMap(stage)) continue;
    const model = stage.get('model');
    if (isMap(model)) {
      absolute(model, 'path');
      absolute(model, 'tokenizer');
    }
    if (stage.get('kind') !== 'thinker') continue;
    thinkers++;
    if (isMap(model) && model.has('path'))
      throw new ChorusError(
        ErrorCodes.CONFIG_INVALID,
        `--thinker-positions: ${config}'s thinker loads a model file; its positions are the file's`,
      );
    if (isMap(model)) model.set('max_positions', maxPositions);
    else stage.set('model', doc.createNode({ max_positions: maxPositions }));
  }
  if (thinkers === 0)
    throw new ChorusError(ErrorCodes.CONFIG_INVALID, `--thinker-positions: ${config} has no stage of kind thinker`);
  const dir = mkdtempSync(path.join(tmpdir(), 'chorus-soak-'));
  const file = path.join(dir, path.basename(config));
  writeFileSync(file, doc.toString());
  return { file, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
