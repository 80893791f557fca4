/**
 * A stage that cannot boot rejects start-up with a typed error naming the stage and the cause, and leaves nothing
 * behind (no stage process, no shared memory).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/loadConfig.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { tempDir } from '../helpers/tempDir.ts';
import { ownSegments } from '../helpers/engine.ts';

describe('stage boot failure', () => {
  it('rejects Orchestrator.start with CHORUS_ERR_STAGE_BOOT and cleans up', async () => {
    const dir = tempDir('boot');
    const file = join(dir, 'garbage.onnx');
    writeFileSync(file, 'this is not an ONNX model');
    // The vocoder of tiny-omni points at a file that is not a model: config checks pass (the file exists), the
    // stage process fails while loading it.
    const yamlFile = join(import.meta.dirname, '..', '..', 'configs', 'tiny-omni-text-in.yaml');
    const text = readFileSync(yamlFile, 'utf8');
    const at = text.indexOf('model: {}', text.indexOf('stage_id: code2wav'));
    const graph = parseConfig(
      `${text.slice(0, at)}model: {path: ${file}}${text.slice(at + 'model: {}'.length)}`,
      yamlFile,
    );
    let caught: unknown;
    try {
      await Orchestrator.start(graph);
    } catch (err) {
      caught = err;
    }
    expect(caught).toMatchObject({ code: 'CHORUS_ERR_STAGE_BOOT' });
    expect((caught as Error).message).toContain('code2wav#0');
    expect(ownSegments()).toEqual([]);
    // The stages that did boot were stopped again.
    const children = execFileSync('ps', ['-o', 'args=', '--ppid', String(process.pid)], { encoding: 'utf8' }).split(
      '\n',
    );
    expect(children.filter((line) => line.includes('stageEntry.ts'))).toEqual([]);
  }, 60_000);
});
