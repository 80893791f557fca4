/**
 * A kind's own YAML section comes from its descriptor (`settings`, stages/tts/descriptor.ts for `tts:`): config
 * resolves it into the stage's `settings` with defaults, refuses it on a stage of another kind, and checks its
 * values against the kind's schema.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/loadConfig.ts';
import { kindSections } from '../../stages/registry.ts';
import { DEFAULT_TTS_SETTINGS, ttsSettingsOf } from '../../stages/tts/ttsSettings.ts';

const TINY_TTS = readFileSync(join(import.meta.dirname, '..', 'e2e', 'tiny-tts.yaml'), 'utf8');
const parse = (text: string) => parseConfig(text, 'tiny-tts.yaml', { cores: 64 });
const problemsOf = (text: string) => {
  try {
    parse(text);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('the config was accepted');
};

describe('kind sections', () => {
  it('the registry lists the sections kinds declare: tts has `tts:`', () => {
    expect(kindSections().map(({ kind, section }) => [kind, section.key])).toEqual([['tts', 'tts']]);
  });

  it('resolves a tts stage’s section with defaults into its settings', () => {
    const tts = parse(TINY_TTS).stages.find((s) => s.kind === 'tts')!;
    expect(ttsSettingsOf(tts).phrases).toEqual({
      firstMinChars: 8,
      firstMaxWords: 4,
      maxChars: DEFAULT_TTS_SETTINGS.phrases.maxChars,
    });
    const bare = parse(TINY_TTS.replace(/ {4}tts:\n( {6}.*\n)+/, '')).stages.find((s) => s.kind === 'tts')!;
    expect(bare.settings).toEqual(DEFAULT_TTS_SETTINGS);
    expect(parse(TINY_TTS).stages.find((s) => s.kind === 'thinker')!.settings).toBeUndefined();
  });

  it('refuses the section on a stage of another kind, and a value its schema does not allow', () => {
    const onThinker = TINY_TTS.replace('    engine:\n      threads: 1\n', '    tts: { speaker_id: 1 }\n');
    expect(problemsOf(onThinker)).toContain('only tts stages take `tts:` settings (this stage is a thinker)');
    expect(problemsOf(TINY_TTS.replace('first_phrase_min_chars: 8', 'first_phrase_min_chars: 0'))).toMatch(
      /stages\[1\]\.tts\.first_phrase_min_chars/,
    );
  });
});
