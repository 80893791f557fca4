import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { configProblems } from '../helpers/configProblems.ts';
import { describe, expect, it } from 'vitest';
import { defaultConfigPath, loadConfig, parseConfig } from '../../src/config/loadConfig.ts';
import { repoRoot, userCacheDir } from '../../src/config/paths.ts';
import { ErrorCodes } from '../../src/common/errors.ts';
import { tempDir } from '../helpers/tempDir.ts';
import { presets } from '../../stages/generator/presets.ts';

const problemsOf = (yaml: string, file?: string) => configProblems(yaml, file);

const thinker = `  - stage_id: thinker
    kind: thinker
    final_output: true
    final_output_type: text
`;

const threeStages = `stages:
${thinker}  - stage_id: talker
    kind: talker
    inputs: [{from: thinker}]
  - stage_id: code2wav
    kind: code2wav
    inputs: [{from: talker}]
    final_output: true
    final_output_type: audio
`;

describe('shipped configs', () => {
  it.each(['tiny-omni-text-in', 'tiny-omni-sync', 'text-only', 'omni-bench', 'two-host'])(
    '%s.yaml loads (no encoders: the entry stage is first)',
    async (name) => {
      const graph = await loadConfig(path.join(repoRoot(), 'configs', `${name}.yaml`));
      expect(graph.stages[0].stageId).toBe(graph.entryStageId);
      expect(graph.stages[0].kind).toBe('thinker');
      expect(graph.file).toBe(path.join(repoRoot(), 'configs', `${name}.yaml`));
    },
  );

  it('tiny-omni is the default: audio + image encoders -> thinker -> talker -> code2wav over shm, async', async () => {
    expect(defaultConfigPath()).toBe(path.join(repoRoot(), 'configs', 'tiny-omni.yaml'));
    const graph = await loadConfig(defaultConfigPath(), { cores: 64 });
    expect(graph.asyncChunk).toBe(true);
    expect(graph.entryStageId).toBe('thinker');
    expect(graph.stages.map((s) => [s.stageId, s.workerType, s.finalOutputType, s.engine.threads])).toEqual([
      ['audio-encoder', 'generation', null, 1],
      ['image-encoder', 'generation', null, 1],
      ['thinker', 'ar', 'text', 1],
      ['talker', 'ar', null, 1],
      ['code2wav', 'generation', 'audio', 1],
    ]);
    expect(graph.stages[2].inputs.map((i) => i.from)).toEqual(['audio-encoder', 'image-encoder']);
    expect(graph.stages[3].inputs).toEqual([{ from: 'thinker', connector: 'shm' }]);
    expect(graph.connectors.shm).toEqual({ name: 'shm', kind: 'shm', options: { ringBytes: 16 * 1024 * 1024 } });
    expect(graph.stages[2].engine.kvCacheBytes).toBe(256 * 1024 * 1024);
  });

  it('tiny-omni-sync differs from tiny-omni-text-in only in async_chunk', async () => {
    const load = (n: string) => loadConfig(path.join(repoRoot(), 'configs', `${n}.yaml`), { cores: 64 });
    const [a, b] = await Promise.all([load('tiny-omni-text-in'), load('tiny-omni-sync')]);
    expect(b.asyncChunk).toBe(false);
    expect(b.configHash).not.toBe(a.configHash); // another text: a remote stage could not join with the other file
    expect({ ...b, file: a.file, asyncChunk: true, configHash: a.configHash }).toEqual(a);
  });

  it('omni-bench uses the omni sizes and the talker condition width follows its thinker', async () => {
    const graph = await loadConfig(path.join(repoRoot(), 'configs', 'omni-bench.yaml'));
    const [t, k, c] = graph.stages.map((s) => s.model);
    if (t.source !== 'generated' || k.source !== 'generated' || c.source !== 'generated')
      throw new Error('expected generated models');
    expect(t.size).toEqual(presets.omni.thinker);
    expect(k.size).toEqual({ ...presets.omni.talker, conditionDim: 2 * presets.omni.thinker.hiddenSize });
    expect(c.size).toEqual(presets.omni.code2wav);
  });
});

describe('defaults and resolution', () => {
  it('fills every default from a minimal file, and freezes the result deeply', () => {
    const graph = parseConfig(threeStages, '/tmp/conf/min.yaml', { cores: 64 });
    expect(graph.asyncChunk).toBe(true);
    expect(graph.scheduling).toBe('fifo');
    expect(graph.modelsDir).toBe(path.join(userCacheDir(), 'models'));
    expect(Object.keys(graph.connectors)).toEqual(['shm']);
    expect(graph.chunkPolicy).toEqual({
      initialCodecChunkFrames: null,
      codecChunkFrames: 25,
      codecLeftContextFrames: 25,
      dynamicInitialChunk: true,
      chunkTimeoutMs: 30000,
      maxChunkWaitMs: 300000,
      ttfpTargetMs: null,
      firstPacketHold: true,
      firstAudioFirst: true,
      speechLeadMs: 10000,
      speechLeadMinAnswers: 12,
      speakingSlice: 4,
      firstPrefillSplit: 0.45,
    });
    const [t, k, c] = graph.stages;
    expect(t.defaultSamplingParams).toEqual({
      temperature: 0,
      topK: 0,
      topP: 1,
      repetitionPenalty: 1,
      frequencyPenalty: 0,
      presencePenalty: 0,
      logitBias: {},
      seed: 0,
      maxTokens: 256,
      stopTokenIds: [],
      ignoreEos: false,
    });
    expect(t.replicas).toBe(1);
    expect([t.workerType, k.workerType, c.workerType]).toEqual(['ar', 'ar', 'generation']);
    expect(t.model).toEqual({
      source: 'generated',
      kind: 'thinker',
      preset: 'tiny',
      seed: 0,
      size: presets.tiny.thinker,
    });

    expect(Object.isFrozen(graph)).toBe(true);
    expect(Object.isFrozen(graph.stages[1].model)).toBe(true);
    expect(Object.isFrozen(t.defaultSamplingParams.stopTokenIds)).toBe(true);
    expect(() => {
      (graph.stages[0].engine as { threads: number }).threads = 8;
    }).toThrow(TypeError);
  });

  it('orders stages topologically whatever the file order', () => {
    const shuffled = `stages:
  - stage_id: code2wav
    kind: code2wav
    inputs: [{from: talker}]
    final_output: true
    final_output_type: audio
  - stage_id: talker
    kind: talker
    inputs: [{from: thinker}]
${thinker}`;
    const graph = parseConfig(shuffled, 'x.yaml', { cores: 64 });
    expect(graph.stages.map((s) => s.stageId)).toEqual(['thinker', 'talker', 'code2wav']);
    expect(graph.entryStageId).toBe('thinker');
  });

  it('applies size overrides on the preset and derives the talker condition width', () => {
    const yaml = threeStages
      .replace('    kind: thinker\n', '    kind: thinker\n    model: {hidden_size: 64, num_heads: 2, seed: 7}\n')
      .replace('    kind: talker\n', '    kind: talker\n    model: {preset: omni, codebook_size: 1024}\n');
    const graph = parseConfig(yaml, 'x.yaml', { cores: 64 });
    const [t, k] = graph.stages.map((s) => s.model);
    if (t.source !== 'generated' || k.source !== 'generated' || k.kind !== 'talker')
      throw new Error('expected generated models');
    expect(t.seed).toBe(7);
    expect(t.size).toMatchObject({ ...presets.tiny.thinker, hiddenSize: 64, numHeads: 2 });
    expect(k.preset).toBe('omni');
    expect(k.size).toEqual({ ...presets.omni.talker, codebookSize: 1024, conditionDim: 128 });
  });

  it('holds generated projections in 4 bits unless a model section asks for float32; refuses other forms', () => {
    expect([presets.tiny.thinker.weights, presets.tiny.talker.weights]).toEqual(['q4', 'q4']);
    const yaml = threeStages
      .replace('    kind: thinker\n', '    kind: thinker\n    model: {weights: float32}\n')
      .replace('    kind: talker\n', '    kind: talker\n    model: {num_layers: 2}\n');
    const [t, k] = parseConfig(yaml, 'x.yaml', { cores: 64 }).stages.map((s) => s.model);
    if (t.source !== 'generated' || t.kind !== 'thinker' || k.source !== 'generated' || k.kind !== 'talker')
      throw new Error('expected a generated Thinker and Talker');
    expect([t.size.weights, k.size.weights]).toEqual(['float32', 'q4']);
    const bad = threeStages.replace('    kind: thinker\n', '    kind: thinker\n    model: {weights: int3}\n');
    expect(problemsOf(bad).join('\n')).toMatch(/weights.*must be one of float32, q4/);
  });

  it('resolves file models against the YAML folder and accepts byte sizes with units', () => {
    const dir = tempDir('config');
    writeFileSync(path.join(dir, 'thinker.onnx'), '');
    mkdirSync(path.join(dir, 'tok'));
    writeFileSync(path.join(dir, 'tok', 'tokenizer.json'), '{}');
    const yaml = `models_dir: cache
stages:
  - stage_id: thinker
    kind: thinker
    model: {path: thinker.onnx, tokenizer: tok}
    engine: {kv_cache_bytes: 1.5GiB}
    final_output: true
    final_output_type: text
`;
    const graph = parseConfig(yaml, path.join(dir, 'g.yaml'), { cores: 64 });
    expect(graph.modelsDir).toBe(path.join(dir, 'cache'));
    expect(graph.stages[0].model).toEqual({
      source: 'file',
      path: path.join(dir, 'thinker.onnx'),
      tokenizer: path.join(dir, 'tok'),
    });
    expect(graph.stages[0].engine.kvCacheBytes).toBe(1.5 * 1024 ** 3);
  });

  it('lets stages share settings through YAML anchors and merge keys', () => {
    const yaml = `stages:
  - stage_id: thinker
    kind: thinker
    engine: &engine {threads: 2, max_num_seqs: 4}
    final_output: true
    final_output_type: text
  - stage_id: talker
    kind: talker
    inputs: [{from: thinker}]
    engine:
      <<: *engine
      max_num_seqs: 8
`;
    const graph = parseConfig(yaml, 'x.yaml', { cores: 64 });
    expect(graph.stages.map((s) => [s.engine.threads, s.engine.maxNumSeqs])).toEqual([
      [2, 4],
      [2, 8],
    ]);
  });

  it('warns (and still loads) when threads x replicas exceed the cores', () => {
    const yaml = threeStages.replace(
      '    kind: talker\n',
      '    kind: talker\n    replicas: 2\n    engine: {threads: 2}\n',
    );
    const graph = parseConfig(yaml, 'x.yaml', { cores: 4 });
    expect(graph.warnings).toHaveLength(1);
    expect(graph.warnings?.[0]).toMatch(/^x\.yaml:\d+ stages: the stages ask for 6 onnxruntime threads .* on 4 cores/);
    expect(parseConfig(yaml, 'x.yaml', { cores: 6 }).warnings).toEqual([]);
  });

  it('warns when the first codec chunk is set above the regular chunk size', () => {
    const graph = parseConfig(`chunk_policy:\n  initial_codec_chunk_frames: 40\n${threeStages}`, 'x.yaml', {
      cores: 64,
    });
    expect(graph.chunkPolicy.initialCodecChunkFrames).toBe(40);
    expect(graph.warnings).toEqual([
      'x.yaml:2 chunk_policy.initial_codec_chunk_frames: 40 is above codec_chunk_frames (25); the first chunk is ' +
        'capped at 25',
    ]);
  });

  it('bounds a live chunk wait at 10 x chunk_timeout_ms unless set, and never below chunk_timeout_ms', () => {
    const policy = (lines: string) => parseConfig(`chunk_policy:\n${lines}${threeStages}`, 'x.yaml').chunkPolicy;
    expect(policy('  chunk_timeout_ms: 500\n').maxChunkWaitMs).toBe(5_000);
    expect(policy('  chunk_timeout_ms: 500\n  max_chunk_wait_ms: 60000\n').maxChunkWaitMs).toBe(60_000);
    expect(policy('  chunk_timeout_ms: 500\n  max_chunk_wait_ms: 100\n').maxChunkWaitMs).toBe(500);
    // Raised, and said so: a setting is never changed silently.
    const raised = parseConfig(
      `chunk_policy:\n  chunk_timeout_ms: 500\n  max_chunk_wait_ms: 100\n${threeStages}`,
      'x.yaml',
    );
    expect(raised.warnings).toEqual([
      "x.yaml:3 chunk_policy.max_chunk_wait_ms: 100 is below chunk_timeout_ms (500); a chunk wait's first deadline " +
        'is that, so waits end at 500',
    ]);
  });

  it('reports a missing file with CONFIG_NOT_FOUND', async () => {
    await expect(loadConfig('/nonexistent/chorus.yaml')).rejects.toMatchObject({ code: ErrorCodes.CONFIG_NOT_FOUND });
  });
});

describe('precise errors', () => {
  it('an unknown key names the line, the path and the likely key', () => {
    const yaml = `stages:
${thinker}    engine:
      thread: 2
`;
    expect(problemsOf(yaml)).toEqual([
      'configs/x.yaml:7 stages[0].engine.thread: unknown key "thread" (did you mean "threads"?)',
    ]);
  });

  it('a wrong type says what was expected and what was found', () => {
    const yaml = `async_chunk: yes
stages:
${thinker}    replicas: two
`;
    expect(problemsOf(yaml)).toEqual([
      'configs/x.yaml:1 async_chunk: must be true or false, got "yes"',
      'configs/x.yaml:7 stages[0].replicas: must be an integer >= 1, got "two"',
    ]);
  });

  it('scheduling and ttfp_target_ms say what they take', () => {
    const yaml = `scheduling: lifo
chunk_policy:
  ttfp_target_ms: 0
stages:
${thinker}`;
    expect(problemsOf(yaml)).toEqual([
      'configs/x.yaml:1 scheduling: must be playback (least slack first) or fifo (oldest first), got "lifo"',
      'configs/x.yaml:3 chunk_policy.ttfp_target_ms: must be a positive integer (ms), or null for no default ' +
        'target, got 0',
    ]);
  });

  it('first_prefill_split takes a share between 0 and 1 or null (default 0.45)', () => {
    const withSplit = (v: string) => `chunk_policy:\n  first_prefill_split: ${v}\nstages:\n${thinker}`;
    for (const bad of ['1', '0', '1.5'])
      expect(problemsOf(withSplit(bad))).toEqual([
        `configs/x.yaml:2 chunk_policy.first_prefill_split: must be a share of the prompt between 0 and 1 (the ` +
          `first step's), or null for one step, got ${bad}`,
      ]);
    expect(parseConfig(withSplit('null'), 'configs/x.yaml').chunkPolicy.firstPrefillSplit).toBeNull();
    expect(parseConfig(withSplit('0.3'), 'configs/x.yaml').chunkPolicy.firstPrefillSplit).toBe(0.3);
    expect(parseConfig(`stages:\n${thinker}`, 'configs/x.yaml').chunkPolicy.firstPrefillSplit).toBe(0.45);
  });

  it('routing takes ttft, least_loaded or round_robin (default ttft)', () => {
    expect(problemsOf(`routing: fastest\nstages:\n${thinker}`)).toEqual([
      'configs/x.yaml:1 routing: must be ttft (lowest estimated time to first token), least_loaded or round_robin, ' +
        'got "fastest"',
    ]);
    expect(parseConfig(`stages:\n${thinker}`, 'configs/x.yaml').routing).toBe('ttft');
    expect(parseConfig(`routing: round_robin\nstages:\n${thinker}`, 'configs/x.yaml').routing).toBe('round_robin');
  });

  it('stage_nice takes 0-19 nice levels (default 8)', () => {
    expect(problemsOf(`stage_nice: 20\nstages:\n${thinker}`)).toHaveLength(1);
    expect(problemsOf(`stage_nice: 20\nstages:\n${thinker}`)[0]).toMatch(/^configs\/x\.yaml:1 stage_nice: /);
    expect(problemsOf(`stage_nice: -1\nstages:\n${thinker}`)).toHaveLength(1);
    expect(parseConfig(`stages:\n${thinker}`, 'configs/x.yaml').stageNice).toBe(8);
    expect(parseConfig(`stage_nice: 0\nstages:\n${thinker}`, 'configs/x.yaml').stageNice).toBe(0);
  });

  it('engine.sched takes idle (Linux SCHED_IDLE through chrt), refused by name otherwise', () => {
    const withSched = (v: string) => `stages:\n${thinker}    engine: {sched: ${v}}\n`;
    expect(parseConfig(withSched('idle'), 'configs/x.yaml').stages[0].engine.sched).toBe('idle');
    expect(parseConfig(`stages:\n${thinker}`, 'configs/x.yaml').stages[0].engine.sched).toBeUndefined();
    expect(problemsOf(withSched('fifo'))).toHaveLength(1);
    expect(problemsOf(withSched('fifo'))[0]).toMatch(/^configs\/x\.yaml:\d+ stages\[0\]\.engine\.sched: /);
    const path = process.env.PATH;
    process.env.PATH = '/nonexistent'; // no chrt to be found
    try {
      expect(problemsOf(withSched('idle'))).toEqual([
        expect.stringMatching(/stages\[0\]\.engine\.sched: sched: idle cannot be applied: it needs util-linux's chrt/),
      ]);
    } finally {
      process.env.PATH = path;
    }
  });

  it('a cycle is named, at the input that closes it', () => {
    const yaml = threeStages.replace(
      '    inputs: [{from: thinker}]',
      '    inputs: [{from: thinker}, {from: code2wav}]',
    );
    expect(problemsOf(yaml)).toEqual([
      'configs/x.yaml:8 stages[1].inputs[1].from: the stages form a cycle: talker -> code2wav -> talker',
    ]);
  });

  it('an input from a stage that does not exist', () => {
    const yaml = threeStages.replace('{from: talker}', '{from: taker}');
    expect(problemsOf(yaml)).toEqual([
      'configs/x.yaml:11 stages[2].inputs[0].from: unknown stage "taker" (did you mean "talker"?) (stages: ' +
        'thinker, talker, code2wav)',
    ]);
  });

  it('an unknown connector', () => {
    const yaml = `connectors:
  shm: {kind: shm}
${threeStages.replace('{from: talker}', '{from: talker, connector: shm2}')}`;
    expect(problemsOf(yaml)).toEqual([
      'configs/x.yaml:13 stages[2].inputs[0].connector: unknown connector "shm2" (did you mean "shm"?) ' +
        '(connectors: shm)',
    ]);
  });

  it('connectors: an unknown kind, bad options, or one that cannot link processes is refused with what to use', () => {
    const yaml = `connectors:
  a: {kind: redis, options: {url: 'http://cache:6379', ttl_seconds: 0}}
  b: {kind: shmm}
  c: {kind: shm, options: {ring_byte: 1024}}
  d: {kind: shm, options: {ring_bytes: lots}}
  e: {kind: inproc}
  f: {kind: constructor}
  g: {kind: shm, options: {ring_bytes: -1}}
${threeStages}`;
    const problems = problemsOf(yaml);
    expect(problems.slice(0, 8)).toEqual([
      'configs/x.yaml:2 connectors.a.options.url: must be a redis://, rediss:// or redis+cluster://host:port,host:port ' +
        'URL, or a list of node URLs, got "http://cache:6379"',
      expect.stringMatching(/^configs\/x\.yaml:2 connectors\.a\.options\.ttl_seconds: .*1/),
      'configs/x.yaml:3 connectors.b.kind: unknown connector kind "shmm" (did you mean "shm"?) (built: shm, redis)',
      'configs/x.yaml:4 connectors.c.options.ring_byte: unknown key "ring_byte" (did you mean "ring_bytes"?)',
      'configs/x.yaml:5 connectors.d.options.ring_bytes: must be a byte count: a positive integer or a string like ' +
        '"64MiB" (B, KiB, MiB, GiB, KB, MB, GB), got "lots"',
      'configs/x.yaml:6 connectors.e.kind: inproc cannot link stage processes: it passes frames within one process ' +
        '(tests); use kind: shm or redis',
      'configs/x.yaml:7 connectors.f.kind: unknown connector kind "constructor" (built: shm, redis)',
      expect.stringMatching(/^configs\/x\.yaml:8 connectors\.g\.options\.ring_bytes: must be a byte count/),
    ]);
  });

  it('placement: remote needs every edge of the stage on redis; replicas and min_replicas go where they belong', () => {
    const yaml = `connectors:
  shm: {kind: shm}
  r: {kind: redis}
stages:
  - {stage_id: thinker, kind: thinker, final_output: true, final_output_type: text, min_replicas: 1}
  - stage_id: talker
    kind: talker
    placement: remote
    replicas: 2
    inputs: [{from: thinker, connector: shm}]
  - stage_id: code2wav
    kind: code2wav
    min_replicas: 2
    inputs: [{from: talker, connector: r}]
    final_output: true
    final_output_type: audio
`;
    expect(problemsOf(yaml)).toEqual([
      'configs/x.yaml:5 stages[0].min_replicas: min_replicas counts instances that join over Redis, and stage ' +
        'thinker takes none: its output to talker uses shm, its final output to main uses shm (put every edge of the ' +
        'stage on a redis connector, or leave min_replicas out)',
      'configs/x.yaml:8 stages[1].placement: stage talker is placement: remote, so every edge touching it must use a ' +
        'redis connector; its input from thinker uses shm (shm): point those inputs at a connector of kind redis',
      'configs/x.yaml:9 stages[1].replicas: a remote stage has no local replicas: start instances with ' +
        '`chorus stage` and set min_replicas',
    ]);
    const ok = parseConfig(
      yaml
        .replace('connector: shm}', 'connector: r}')
        .replace('    replicas: 2\n', '')
        .replace(', min_replicas: 1}', '}'),
      'x.yaml',
    );
    expect(ok.stages.map((s) => [s.stageId, s.placement, s.replicas, s.minReplicas, s.joinable])).toEqual([
      ['thinker', 'local', 1, 0, false],
      ['talker', 'remote', 0, 1, true],
      ['code2wav', 'local', 1, 2, true], // local, its edges on redis: two more join beside its replica
    ]);
  });

  it('connectors: ring_bytes is resolved once, in bytes, for the transport', () => {
    const graph = parseConfig(
      `connectors:\n  fast: {kind: shm, options: {ring_bytes: 4MiB}}\n${threeStages}`,
      'x.yaml',
    );
    expect(graph.connectors.fast).toEqual({ name: 'fast', kind: 'shm', options: { ringBytes: 4 * 1024 * 1024 } });
  });

  it('two entry stages', () => {
    const yaml = `stages:
${thinker}${thinker.replace('stage_id: thinker', 'stage_id: thinker-2')}`;
    const [problem] = problemsOf(yaml);
    expect(problem).toMatch(/^configs\/x\.yaml:6 stages\[1\]: 2 entry stages \(stages with no inputs but encoders\): /);
    expect(problem).toMatch(/encoders\): "thinker" \(stages\[0\]\), "thinker-2" \(stages\[1\]\)/);
  });

  it('a YAML syntax error gets the line from the parser', () => {
    const yaml = `stages:
  - stage_id: thinker
    kind: [thinker
    final_output: true
`;
    const problems = problemsOf(yaml);
    expect(problems.length).toBeGreaterThan(0);
    expect(problems[0]).toMatch(/^configs\/x\.yaml:[34] YAML syntax error: /);
  });

  it('a duplicate key is a syntax error at its line', () => {
    const yaml = `stages:\n${thinker}    kind: talker\n`;
    expect(problemsOf(yaml)).toEqual(['configs/x.yaml:6 YAML syntax error: Map keys must be unique']);
  });

  it('lists every problem, one per line, in file order', () => {
    const yaml = `stages:
  - stage_id: Thinker_1
    kind: thinker
    final_output: true
  - stage_id: talker
    kind: speaker
    replicas: 0
`;
    expect(problemsOf(yaml)).toEqual([
      'configs/x.yaml:2 stages[0].stage_id: must be lowercase letters, digits and single dashes (no "_"), e.g. ' +
        '"thinker" or "talker-2", got "Thinker_1"',
      'configs/x.yaml:6 stages[1].kind: must be one of thinker, talker, code2wav, encoder, tts, got "speaker"',
      'configs/x.yaml:7 stages[1].replicas: must be an integer >= 1, got 0',
    ]);
  });

  it('final_output without final_output_type, and a next_stage_processor key (decided by the kinds now)', () => {
    const yaml = threeStages
      .replace('    final_output_type: text\n', '    next_stage_processor: talker2code2wav\n')
      .replace('    final_output_type: audio\n', '');
    expect(problemsOf(yaml)).toEqual([
      'configs/x.yaml:4 stages[0].final_output: final_output_type is required when final_output is true (text or ' +
        'audio)',
      'configs/x.yaml:5 stages[0].next_stage_processor: is decided by the two stage kinds of the edge ' +
        '(thinker -> talker, talker -> code2wav): remove the key',
      'configs/x.yaml:12 stages[2].final_output: final_output_type is required when final_output is true (text or ' +
        'audio)',
    ]);
  });

  it('code2wav codebooks must match the talker', () => {
    const yaml = threeStages.replace('    kind: talker\n', '    kind: talker\n    model: {codebook_size: 2048}\n');
    expect(problemsOf(yaml)).toEqual([
      // code2wav has no model: key, so the line is where the stage starts.
      'configs/x.yaml:10 stages[2].model: codebook_size 1024 does not match talker "talker" ' +
        '(stages[1].model.codebook_size = 2048); the vocoder must decode every code the talker emits — set both to ' +
        'the same value',
    ]);
  });

  it('a condition_dim that contradicts the thinker, and an unknown preset', () => {
    const yaml = threeStages
      .replace('    kind: talker\n', '    kind: talker\n    model: {condition_dim: 100}\n')
      .replace('    kind: code2wav\n', '    kind: code2wav\n    model: {preset: omnii}\n');
    expect(problemsOf(yaml)).toEqual([
      `configs/x.yaml:8 stages[1].model.condition_dim: must be 2 x hidden_size of thinker "thinker" = ` +
        `${2 * presets.tiny.thinker.hiddenSize}, got 100 (leave it out: it is derived)`,
      'configs/x.yaml:12 stages[2].model.preset: unknown model preset "omnii" (did you mean "omni"?) (presets: ' +
        'tiny, omni)',
    ]);
  });

  it('a missing model file and a stop token outside the vocabulary', () => {
    const yaml = `stages:
${thinker}    next_stage_processor: null
    default_sampling_params: {stop_token_ids: [257, 512]}
  - stage_id: talker
    kind: talker
    model: {path: nowhere.onnx}
    inputs: [{from: thinker}]
`;
    const problems = problemsOf(yaml, '/tmp/chorus-missing/x.yaml');
    expect(problems).toEqual([
      '/tmp/chorus-missing/x.yaml:6 stages[0].next_stage_processor: is decided by the two stage kinds of the ' +
        'edge (thinker -> talker, talker -> code2wav): remove the key',
      '/tmp/chorus-missing/x.yaml:7 stages[0].default_sampling_params.stop_token_ids[1]: token id 512 is outside ' +
        'the vocabulary (vocab_size 512)',
      '/tmp/chorus-missing/x.yaml:10 stages[1].model.path: model file not found: /tmp/chorus-missing/nowhere.onnx ' +
        "(relative paths are resolved against the YAML file's folder)",
    ]);
  });
});
