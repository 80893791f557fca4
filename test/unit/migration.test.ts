/**
 * The bookkeeping of request migration (src/engine/requests/migration.ts): when a lost request may be replayed,
 * the run ids of its replays, and which of a replay's tokens and samples the client already has; and the
 * `engine.migration` setting as the config loader reads it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/loadConfig.ts';
import {
  answerTokensOf,
  migrationVerdict,
  ReplayCursor,
  requestIdOfRun,
  runIdOf,
} from '../../src/engine/requests/migration.ts';
import { configProblems } from '../helpers/configProblems.ts';

const settings = { maxAttempts: 2, maxReplayTokens: 100, maxWaitMs: null };
const verdict = (o: Partial<Parameters<typeof migrationVerdict>[0]>) =>
  migrationVerdict({ settings, attempts: 0, answerTokens: 10, ...o });

describe('migrationVerdict', () => {
  it('replays a request within the limits', () => {
    expect(verdict({})).toEqual({ migrate: true });
    expect(verdict({ attempts: 1, answerTokens: 100 })).toEqual({ migrate: true }); // both limits are inclusive
  });

  it('refuses past max_attempts, past max_replay_tokens, or with migration off, saying which', () => {
    expect(verdict({ attempts: 2 })).toEqual({ migrate: false, why: expect.stringMatching(/2 times .*max_attempts/) });
    expect(verdict({ answerTokens: 101 })).toEqual({
      migrate: false,
      why: expect.stringMatching(/101 tokens, more than engine.migration.max_replay_tokens \(100\)/),
    });
    expect(verdict({ settings: null })).toEqual({ migrate: false, why: expect.stringMatching(/off/) });
  });
});

describe('run ids', () => {
  it('the first run is the request id; replays add ~N, which no client id can carry', () => {
    expect(runIdOf('req-1', 0)).toBe('req-1');
    expect(runIdOf('req-1', 2)).toBe('req-1~2');
    for (const run of ['req-1', 'req-1~1', 'req-1~12', 'a.b:c-d~3']) expect(requestIdOfRun(run)).toMatch(/^[^~]+$/);
    expect(requestIdOfRun(runIdOf('a.b:c-d', 3))).toBe('a.b:c-d');
  });
});

describe('ReplayCursor', () => {
  it('skips the tokens delivered, however the replay cuts its chunks', () => {
    const cursor = new ReplayCursor(5, 0);
    expect(cursor.newTokens([1, 2])).toEqual([]);
    expect(cursor.caughtUp).toBe(false);
    expect(cursor.newTokens([3, 4, 5, 6, 7])).toEqual([6, 7]); // the boundary falls inside a chunk
    expect(cursor.caughtUp).toBe(true);
    expect(cursor.newTokens([8])).toEqual([8]);
  });

  it('skips the samples delivered: the replay resumes at the next sample, none twice, none lost', () => {
    const answer = Float32Array.from({ length: 100 }, (_, i) => i);
    const delivered = answer.subarray(0, 37); // what the client had when the stage died
    const cursor = new ReplayCursor(0, delivered.length);
    const out: number[] = [...delivered];
    for (const [from, to] of [
      [0, 30],
      [30, 60],
      [60, 100],
    ])
      out.push(...cursor.newSamples(answer.subarray(from, to)));
    expect(out).toEqual([...answer]);
  });

  it('a replay of an answer that was all delivered adds nothing', () => {
    const cursor = new ReplayCursor(3, 10);
    expect(cursor.newTokens([1, 2, 3])).toEqual([]);
    expect(cursor.newSamples(new Float32Array(10)).length).toBe(0);
    expect(cursor.caughtUp).toBe(true);
  });
});

describe('answerTokensOf', () => {
  it('counts the text delivered, or the tokens behind the audio when there is no text out', () => {
    const audio = { samplesPerFrame: 1920, framesPerToken: 2 };
    expect(answerTokensOf({ tokens: 12, samples: 3 * 3840 }, audio)).toBe(12);
    expect(answerTokensOf({ tokens: 0, samples: 3 * 3840 + 1 }, audio)).toBe(4);
    expect(answerTokensOf({ tokens: 7, samples: 0 }, null)).toBe(7);
  });
});

describe('engine.migration in YAML', () => {
  const shipped = readFileSync(join(import.meta.dirname, '..', '..', 'configs', 'tiny-omni.yaml'), 'utf8');
  const talkerEngine = 'max_num_batched_tokens: 600 # the Talker prefills a burst in groups too';
  const withTalker = (migration: string) => shipped.replace(talkerEngine, `${talkerEngine}\n      ${migration}`);
  const talker = (yaml: string) => parseConfig(yaml, 'x.yaml', { cores: 64 }).stages.find((s) => s.kind === 'talker')!;

  it('is on with the defaults unless set (none on an encoder); {} takes the defaults; false is off', () => {
    expect(shipped).toContain(talkerEngine);
    const graph = parseConfig(shipped, 'x.yaml', { cores: 64 });
    for (const s of graph.stages)
      expect([s.stageId, s.engine.migration]).toEqual([
        s.stageId,
        s.kind === 'encoder' ? null : { maxAttempts: 2, maxReplayTokens: 4096, maxWaitMs: null },
      ]);
    expect(talker(shipped).engine.migration).toEqual({ maxAttempts: 2, maxReplayTokens: 4096, maxWaitMs: null });
    expect(talker(withTalker('migration: {}')).engine.migration).toEqual({
      maxAttempts: 2,
      maxReplayTokens: 4096,
      maxWaitMs: null,
    });
    expect(talker(withTalker('migration: { max_attempts: 1, max_replay_tokens: 0 }')).engine.migration).toEqual({
      maxAttempts: 1,
      maxReplayTokens: 0,
      maxWaitMs: null,
    });
    expect(talker(withTalker('migration: { max_wait_ms: 1500 }')).engine.migration).toEqual({
      maxAttempts: 2,
      maxReplayTokens: 4096,
      maxWaitMs: 1500,
    });
    expect(talker(withTalker('migration: false')).engine.migration).toBeNull();
  });

  it('refuses a malformed setting and one on an encoder stage, naming the path', () => {
    const yaml = withTalker('migration: { max_attempts: 0 }');
    // The problem names the line the setting is on (the shipped file's comments move it: count, do not hard-code).
    const line = yaml.split('\n').findIndex((l) => l.includes('max_attempts: 0')) + 1;
    expect(configProblems(yaml)).toEqual([
      expect.stringMatching(
        new RegExp(
          `:${line} stages\\[3\\]\\.engine\\.migration: .*max_attempts: an integer >= 1.*got .*"max_attempts":0`,
        ),
      ),
    ]);
    expect(configProblems(withTalker('migration: true'))).toEqual([
      expect.stringMatching(/engine\.migration: must be false \(off\) or \{max_attempts: .*got true/),
    ]);
    for (const waitMs of [0, 3_600_001, 1.5])
      expect(configProblems(withTalker(`migration: { max_wait_ms: ${waitMs} }`))).toEqual([
        expect.stringMatching(/engine\.migration: .*max_wait_ms: an integer from 1 to 3600000/),
      ]);
    expect(configProblems(withTalker('migration: { attempts: 2 }'))).toEqual([
      expect.stringMatching(/engine\.migration/),
    ]);
    const encoder = shipped.replace(
      '    engine:\n      threads: 1\n    encoder:\n      modality: audio',
      '    engine:\n      threads: 1\n      migration: {}\n    encoder:\n      modality: audio',
    );
    expect(encoder).not.toBe(shipped);
    expect(configProblems(encoder)).toEqual([
      expect.stringMatching(/stages\[0\]\.engine\.migration: an encoder stage does not migrate requests/),
    ]);
  });
});
