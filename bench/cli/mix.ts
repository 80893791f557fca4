/**
 * `chorus bench --mix text=0.6,image=0.25,audio=0.15 --router ttft,least_loaded --config configs/epd.yaml`: the
 * mixed-modality routing bench (bench/epd). Each router runs on a fresh deployment of the config, remote stages
 * included (the bench starts a redis-server and the `chorus stage` processes), with the same seeded workload.
 */
import path from 'node:path';
import { logger, repoRoot, UsageError, type RoutingPolicy } from '../../src/basics.ts';
import { gitSha } from '../common.ts';
import { writeResultFiles } from '../report/writeResultFiles.ts';
import { numberIn, parse, printReport, resultsDir } from './flags.ts';

const ROUTERS: readonly RoutingPolicy[] = ['ttft', 'least_loaded', 'round_robin'];

export const mixUsage = `  chorus bench --mix text=0.6,image=0.25,audio=0.15,video=0 | 50/30/20 (text/image/video)
               [--router ttft,least_loaded]
               [--config configs/epd.yaml] [--num-prompts 120] [--rate 3] [--repeat-share 0.3] [--output-len 8]
               [--seed 0] [--out DIR] [--json]
`;

export async function runMixCommand(argv: string[]): Promise<number> {
  const v = parse(argv, {
    mix: { type: 'string' },
    router: { type: 'string', default: 'ttft,least_loaded' },
    config: { type: 'string', default: path.join(repoRoot(), 'configs', 'epd.yaml') },
    'num-prompts': { type: 'string' },
    rate: { type: 'string' },
    'repeat-share': { type: 'string' },
    'output-len': { type: 'string' },
    seed: { type: 'string' },
    out: { type: 'string' },
    json: { type: 'boolean', default: false },
  });
  const { parseMix } = await import('../epd/mixWorkload.ts');
  const { runMixBench } = await import('../epd/runMixBench.ts');
  const { formatMix } = await import('../epd/formatMix.ts');
  let mix;
  try {
    mix = parseMix(v.mix ?? '');
  } catch (err) {
    throw new UsageError((err as Error).message, { cause: err });
  }
  const routers = v.router.split(',').map((r) => r.trim());
  const unknown = routers.find((r) => !ROUTERS.includes(r as RoutingPolicy));
  if (unknown !== undefined)
    throw new UsageError(`--router: unknown router "${unknown}"; choose from ${ROUTERS.join(', ')}`);
  const command = `chorus bench ${argv.join(' ')}`;
  const result = await runMixBench({
    config: path.resolve(v.config),
    routers: routers as RoutingPolicy[],
    mix,
    numRequests: numberIn('num-prompts', v['num-prompts'], 120, 1),
    ratePerSecond: numberIn('rate', v.rate, 3, 0.01),
    repeatShare: numberIn('repeat-share', v['repeat-share'], 0.3, 0, 1),
    maxTokens: numberIn('output-len', v['output-len'], 8, 1),
    seed: numberIn('seed', v.seed, 0, 0),
    log: logger.child({ component: 'bench' }),
  });
  const markdown = formatMix(result, command);
  const body = { command, git_sha: gitSha(), ...result, runs: result.runs.map(({ requests: _r, ...run }) => run) };
  const requests = result.runs.map((run) => ({ router: run.router, requests: run.requests }));
  const out = resultsDir(v.out, 'mix', new Date().toISOString());
  const files = await writeResultFiles(out, body, markdown, { requests });
  printReport(v.json, body, () => markdown, files);
  return result.runs.some((r) => r.failed > 0) ? 1 : 0;
}
