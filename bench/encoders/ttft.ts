/**
 * `node --import tsx bench/encoders/ttft.ts [--config configs/tiny-omni.yaml] [--audio-encoder-model "{num_layers:
 * 6}"]
 *   [--audio-seconds 30] [--rounds 5] [--text-requests 8] [--json]`
 * — TTFT of text-only requests, unloaded and while a long audio clip is being encoded (CHORUS_LOG_LEVEL=warn to quiet
 * logs).
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { repoRoot } from '../../src/config/paths.ts';
import { formatTtftBench, runTtftBench } from './runTtftBench.ts';

const { values } = parseArgs({
  options: {
    config: { type: 'string', default: path.join(repoRoot(), 'configs', 'tiny-omni.yaml') },
    'audio-encoder-model': { type: 'string' },
    'audio-seconds': { type: 'string', default: '30' },
    rounds: { type: 'string', default: '5' },
    'text-requests': { type: 'string', default: '8' },
    json: { type: 'boolean', default: false },
  },
});

const result = await runTtftBench({
  config: values.config!,
  audioEncoderModel: values['audio-encoder-model'],
  audioSeconds: Number(values['audio-seconds']),
  rounds: Number(values.rounds),
  textRequests: Number(values['text-requests']),
});
process.stdout.write(values.json ? `${JSON.stringify(result, null, 2)}\n` : `${formatTtftBench(result)}\n`);
process.exit(0);
