/**
 * `chorus bench --mix text=0.6,image=0.25,audio=0.15 --router ttft,least_loaded --config configs/epd.yaml`: the
 * mixed-modality routing bench (bench/epd). Each router runs on a fresh deployment of the config, remote stages
 * included (the bench starts a redis-server and the `chorus stage` processes), with the same seeded workload.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { logger, repoRoot, UsageError, type RoutingPolicy } from '../../src/basics.ts';

const ROUTERS: readonly RoutingPolicy[] = ['ttft', 'least_loaded', 'round_robin'];

export const mixUsage = `  chorus bench --mix text=0.6,image=0.25,audio=0.15,video=0 | 50/30/20 (text/image/video)
               [--router ttft,least_loaded]
               [--config configs/epd.yaml] [--num-prompts 120] [--rate 3] [--repeat-share 0.3] [--output-len 8]
               [--seed 0] [--out DIR] [--json]
`;

function number(name: string, value: string | undefined, fallback: number, min: number, max = Infinity): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < min || n > max)
    throw new UsageError(`--${name} must be a number in [${min}, ${max}], got "${value}"`);
  return n;
}

export async function runMixCommand(argv: string[]): Promise<number> {
  let v;
  try {
    v = parseArgs({
      args: argv,
      options: {
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
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    throw new UsageError((err as Error).message, { cause: err });
  }
  const { parseMix } = await import('../epd/mixWorkload.ts');
  const { runMixBench } = await import('../epd/runMixBench.ts');
  const { formatMix, mixGoals, writeMixResults } = await import('../epd/formatMix.ts');
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
    numRequests: number('num-prompts', v['num-prompts'], 120, 1),
    ratePerSecond: number('rate', v.rate, 3, 0.01),
    repeatShare: number('repeat-share', v['repeat-share'], 0.3, 0, 1),
    maxTokens: number('output-len', v['output-len'], 8, 1),
    seed: number('seed', v.seed, 0, 0),
    log: logger.child({ component: 'bench' }),
  });
  const goals = mixGoals(result);
  const out = path.resolve(
    v.out ?? path.join(repoRoot(), 'bench', 'results', `mix-${new Date().toISOString().replace(/[:.]/g, '-')}`),
  );
  const files = await writeMixResults(out, result, goals, command);
  process.stdout.write(v.json ? `${JSON.stringify({ ...result, goals }, null, 2)}\n` : `${formatMix(result, goals)}\n`);
  process.stderr.write(`wrote ${files.json}, ${files.markdown}, ${files.requests}\n`);
  return result.runs.some((r) => r.failed > 0) ? 1 : 0;
}
