/**
 * `chorus models build|info [--config FILE]`: builds the generated models a stage graph uses, the audio and
 * vision encoders included (with progress; they are cached under models_dir and reused), or describes them
 * without building: sizes, folder, files, and for bring-your-own files what their signature offers.
 */
import { verbCommandArgs } from '../commandFlags.ts';

export const usage = `usage: chorus models <build|info> [--config FILE]
       chorus models import FILE.gguf [--models-dir DIR] [--weights q4|float32]

  build   build the generated models of every stage (first use only; then they are reused)
  info    describe each stage's model without building: sizes, folder, files, signature
  import  convert a GGUF LLM (llama, qwen2) into a Thinker folder in the model cache: ONNX decoder, tokenizer,
          chat template (once per file content; then it is reused)
  --config FILE      the stage graph (default: configs/tiny-omni.yaml)
  --models-dir DIR   the model cache for import (default: models/ in $CHORUS_CACHE_DIR, else ~/.cache/chorus)
  --weights FORM     q4 keeps Q4_0/Q4_1 weights 4-bit (onnxruntime MatMulNBits, exact; the default: 1.5x the
                     decode speed of float32 on SmolLM2, bench/README.md), float32 dequantizes every weight
`;

export async function run(argv: string[]): Promise<number> {
  const flags = {
    config: { type: 'string', short: 'c' },
    'models-dir': { type: 'string' },
    weights: { type: 'string' },
  } as const;
  const parsed = verbCommandArgs('models', argv, flags, usage);
  if (typeof parsed === 'number') return parsed;
  const [verb, ...extra] = parsed.positionals;
  if (verb === 'import' && extra.length !== 1) {
    process.stderr.write(`chorus models import: expected one .gguf file\n\n${usage}`);
    return 2;
  }
  if (verb !== 'import' && ((verb !== 'build' && verb !== 'info') || extra.length > 0)) {
    process.stderr.write(
      verb === undefined
        ? usage
        : `chorus models: unexpected "${verb === 'build' || verb === 'info' ? extra[0] : verb}"\n\n${usage}`,
    );
    return 2;
  }
  // The command line is checked: now the builders and the importer (./modelsWork.ts), seconds of loading.
  const work = await import('./modelsWork.ts');
  if (verb === 'import') return work.runImport(extra[0], parsed.values['models-dir'], parsed.values.weights);
  return work.buildOrInfo(verb, parsed.values.config);
}
