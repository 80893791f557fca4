/** Generated models are built once per (kind, sizes, seed, generator version) and reused. */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelBuildMsHere } from '../../src/common/modelBuildTime.ts';
import { ensureModel, modelDirName, type ModelBuildProgress } from '../../stages/models/ensureModel.ts';
import { code2wavSpec, smallCode2Wav, tempModelsDir } from './helpers.ts';

let models: ReturnType<typeof tempModelsDir>;
beforeAll(() => {
  models = tempModelsDir();
});
afterAll(() => models?.cleanup());

describe('ensureModel', () => {
  it('builds on first use with progress, then reuses the folder', async () => {
    const progress: ModelBuildProgress[] = [];
    const builtBefore = modelBuildMsHere();
    const first = await ensureModel(code2wavSpec(1), models.dir, (p) => progress.push(p));
    expect(first.built).toBe(true);
    expect(modelBuildMsHere() - builtBefore).toBe(first.manifest!.buildMs); // READY's buildMs: a restart skips it
    expect(progress.length).toBeGreaterThan(1);
    expect(progress.at(-1)).toMatchObject({ kind: 'code2wav', done: progress.at(-1)!.total });
    expect(first.dir).toBe(join(models.dir, modelDirName(code2wavSpec(1))));
    expect(first.manifest?.files['code2wav.onnx']).toBeGreaterThan(0);
    const bytes = readFileSync(first.files['code2wav.onnx']);

    const again = await ensureModel(code2wavSpec(1), models.dir, (p) => progress.push(p));
    expect(again.built).toBe(false);
    expect(modelBuildMsHere() - builtBefore).toBe(first.manifest!.buildMs); // found built: nothing added
    expect(again.files).toEqual(first.files);
    // Same seed, same weights: a rebuild elsewhere is byte-identical.
    const other = tempModelsDir();
    try {
      const rebuilt = await ensureModel(code2wavSpec(1), other.dir);
      expect(readFileSync(rebuilt.files['code2wav.onnx']).equals(bytes)).toBe(true);
    } finally {
      other.cleanup();
    }
  });

  it('keys the folder by seed and sizes, and concurrent callers share one build', async () => {
    expect(modelDirName(code2wavSpec(2))).not.toBe(modelDirName(code2wavSpec(1)));
    expect(modelDirName(code2wavSpec(1, { ...smallCode2Wav, hiddenSize: 16 }))).not.toBe(modelDirName(code2wavSpec(1)));
    const [a, b] = await Promise.all([
      ensureModel(code2wavSpec(3), models.dir),
      ensureModel(code2wavSpec(3), models.dir),
    ]);
    expect(a).toBe(b);
    expect(readdirSync(models.dir).filter((n) => n.includes('.tmp-'))).toEqual([]);
  });

  it('ignores a half-written folder from a crashed build (no manifest) by building next to it', async () => {
    const spec = code2wavSpec(4);
    const dir = join(models.dir, modelDirName(spec));
    // A crash leaves only temp folders; the final name appears by rename once complete.
    mkdirSync(`${dir}.tmp-99999-1`);
    writeFileSync(join(`${dir}.tmp-99999-1`, 'code2wav.onnx'), 'partial');
    const built = await ensureModel(spec, models.dir);
    expect(built.built).toBe(true);
    expect(existsSync(join(dir, 'manifest.json'))).toBe(true);
  });
});
