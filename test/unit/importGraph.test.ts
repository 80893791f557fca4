/** The layering rules over hand-made graphs (each rule fires), a graph read from disk, and the real tree. */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkImportGraph, readImportGraph, type ImportEdge } from '../helpers/importGraph.ts';

const REPO = join(import.meta.dirname, '..', '..');
const edge = (from: string, to: string, line = 1): ImportEdge => ({ from, to, line });
const rules = (edges: ImportEdge[], files = [...new Set(edges.flatMap((e) => [e.from, e.to]))]) =>
  checkImportGraph(edges, files).map((v) => v.rule);

describe('import rules over fixture graphs', () => {
  it('allows a downward import', () => {
    expect(rules([edge('src/engine/Orchestrator.ts', 'src/worker/StageWorker.ts')])).toEqual([]);
  });

  it('reports an upward import with both layers and the line', () => {
    const [v] = checkImportGraph([edge('src/sched/chunkPolicy.ts', 'src/engine/x.ts', 6)], []);
    expect(v.rule).toBe('upward import');
    expect(v.message).toBe(
      'upward import: src/sched/chunkPolicy.ts:6 (src/sched, rank 1) imports src/engine/x.ts (src/engine, rank 6)',
    );
  });

  it('reports the floor importing anything of the project', () => {
    expect(rules([edge('src/common/errors.ts', 'transport/codec.ts')])).toEqual(['floor imports nothing']);
  });

  it('reports an import between peers of one rank', () => {
    expect(rules([edge('src/sched/a.ts', 'transport/b.ts')])).toEqual(['peer import']);
  });

  it('reports a cycle with every file in it', () => {
    const v = checkImportGraph(
      [edge('stages/a.ts', 'stages/b.ts'), edge('stages/b.ts', 'stages/c.ts'), edge('stages/c.ts', 'stages/a.ts')],
      [],
    );
    expect(v.map((x) => x.rule)).toEqual(['circular import']);
    for (const f of ['stages/a.ts', 'stages/b.ts', 'stages/c.ts']) expect(v[0].message).toContain(f);
  });

  it('reports the bench importing a test helper', () => {
    expect(rules([edge('bench/epd/runMixBench.ts', 'test/helpers/media.ts')])).toEqual(['upward import']);
  });

  it('lets the engine reach stages/ through the kind registry and the kind files it names only', () => {
    expect(rules([edge('src/engine/stageAdds.ts', 'stages/registry.ts')])).toEqual([]);
    const [v] = checkImportGraph([edge('src/engine/mediaPrompt.ts', 'stages/models/KvDecoder.ts', 12)], []);
    expect(v.rule).toBe('walled import');
    expect(v.message).toContain('(src/engine reaches stages only through stages/registry.ts, ');
    expect(rules([edge('src/engine/Orchestrator.ts', 'stages/talker/TalkerCore.ts')])).toEqual(['walled import']);
  });

  it('keeps the shared model code below the worker and the kind folders above it, as one layer', () => {
    expect(rules([edge('stages/thinker/ThinkerCore.ts', 'src/worker/StageCore.ts')])).toEqual([]);
    expect(rules([edge('stages/talker/TalkerCore.ts', 'stages/thinker/protocol.ts')])).toEqual([]);
    expect(rules([edge('stages/registry.ts', 'stages/tts/descriptor.ts')])).toEqual([]);
    expect(rules([edge('stages/thinker/OnnxThinkerRunner.ts', 'stages/models/KvDecoder.ts')])).toEqual([]);
    expect(rules([edge('stages/models/KvDecoder.ts', 'src/worker/StageCore.ts')])).toEqual(['upward import']);
    const [v] = checkImportGraph([edge('stages/sampling/sampleToken.ts', 'stages/thinker/ThinkerCore.ts', 3)], []);
    expect(v.message).toBe(
      'upward import: stages/sampling/sampleToken.ts:3 (stages (model code), rank 2) imports ' +
        'stages/thinker/ThinkerCore.ts (stages (kinds), rank 4)',
    );
  });

  it('lets the engine reach transport/ through the registry and Connector.ts only', () => {
    expect(rules([edge('src/engine/Orchestrator.ts', 'transport/registry.ts')])).toEqual([]);
    expect(rules([edge('src/engine/Orchestrator.ts', 'transport/Connector.ts')])).toEqual([]);
    const [v] = checkImportGraph([edge('src/engine/ec/EcStore.ts', 'transport/redis/EcRedis.ts', 14)], []);
    expect(v.message).toBe(
      'walled import: src/engine/ec/EcStore.ts:14 imports transport/redis/EcRedis.ts (src/engine reaches ' +
        'transport only through transport/registry.ts, transport/Connector.ts)',
    );
    // The wall is the engine's: the worker below it may open a connector directly.
    expect(rules([edge('src/worker/stageMain.ts', 'transport/createConnector.ts')])).toEqual([]);
  });

  it('lets the server reach voice through src/voice/index.ts only', () => {
    expect(rules([edge('src/server/app.ts', 'src/voice/index.ts')])).toEqual([]);
    expect(rules([edge('src/server/realtime/VoiceTurns.ts', 'src/voice/TurnDetector.ts')])).toEqual(['walled import']);
  });

  it('lets the bench reach the package through its public entry only (src/index.ts, src/basics.ts)', () => {
    expect(rules([edge('bench/ttfp/inProcessServer.ts', 'src/index.ts')])).toEqual([]);
    expect(rules([edge('bench/ttfp/prompts.ts', 'src/basics.ts')])).toEqual([]);
    const [v] = checkImportGraph([edge('bench/limit/runLimit.ts', 'src/sched/chunkPolicy.ts', 9)], []);
    expect(v.message).toBe(
      'walled import: bench/limit/runLimit.ts:9 imports src/sched/chunkPolicy.ts (bench reaches src only through ' +
        'src/index.ts, src/basics.ts)',
    );
    expect(rules([edge('bench/limit/runLimit.ts', 'stages/runners.ts')])).toEqual(['walled import']);
    expect(rules([edge('bench/limit/runLimit.ts', 'transport/shm/ShmRing.ts')])).toEqual(['walled import']);
    expect(rules([edge('src/cli/commands/bench.ts', 'bench/cli/bench.ts')])).toEqual([]);
    expect(rules([edge('src/cli/commands/bench.ts', 'bench/limit/runLimit.ts')])).toEqual(['walled import']);
    // The entry sits above everything it names, so no file of the package can import it back.
    expect(rules([edge('src/server/app.ts', 'src/index.ts')])).toEqual(['upward import']);
  });

  it('reports a file outside every layer', () => {
    expect(rules([], ['src/util/x.ts'])).toEqual(['unlayered file']);
  });
});

describe('import rules over files on disk', () => {
  it('reads static, type-only and dynamic imports', () => {
    const root = mkdtempSync(join(tmpdir(), 'chorus-imports-'));
    try {
      mkdirSync(join(root, 'src', 'sched'), { recursive: true });
      mkdirSync(join(root, 'src', 'engine'), { recursive: true });
      writeFileSync(join(root, 'src', 'engine', 'e.ts'), "export const e = 1;\nimport type { X } from './t.ts';\n");
      writeFileSync(join(root, 'src', 'engine', 't.ts'), 'export type X = number;\n');
      writeFileSync(join(root, 'src', 'sched', 's.ts'), "export const s = () => import('../engine/e.ts');\n");
      const { files, edges } = readImportGraph(root, ['src']);
      expect(edges).toContainEqual({ from: 'src/engine/e.ts', to: 'src/engine/t.ts', line: 2 });
      expect(checkImportGraph(edges, files).map((v) => v.message)).toEqual([
        'upward import: src/sched/s.ts:1 (src/sched, rank 1) imports src/engine/e.ts (src/engine, rank 6)',
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('the real tree', () => {
  it('keeps every rule', () => {
    const { files, edges } = readImportGraph(REPO, ['src', 'stages', 'transport', 'bench', 'test']);
    expect(checkImportGraph(edges, files).map((v) => v.message)).toEqual([]);
  });
});
