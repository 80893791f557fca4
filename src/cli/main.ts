/**
 * `chorus <command> [...]`. Each command lives in its own module under ./commands and is loaded lazily,
 * so `chorus config check` never pays for onnxruntime or fastify. A command's module imports only what its usage and
 * flags need, and loads the pipeline, the server or the bench once its flags are checked: --help and a bad flag
 * answer in the time tsx takes to start, not the seconds the whole module tree takes to load.
 */
import { ChorusError } from '../common/errors.ts';
import { isUsageError, wantsHelp } from '../common/cliArgs.ts';

/** A command module: its usage text and its entry point. */
interface Command {
  readonly usage: string;
  run(argv: string[]): Promise<number>;
}

const commands: Record<string, { summary: string; load: () => Promise<Command> }> = {
  serve: { summary: 'serve a pipeline over HTTP and WebSocket', load: () => import('./commands/serve.ts') },
  generate: {
    summary: 'run one request and stream its text (and audio to a WAV)',
    load: () => import('./commands/generate.ts'),
  },
  bench: {
    summary: 'measure TTFP, TTFT and friends (bench limit)',
    load: () => import('./commands/bench.ts'),
  },
  models: {
    summary: 'build or describe the generated models (models build | models info)',
    load: () => import('./commands/models.ts'),
  },
  soak: {
    summary: 'sessions for a while, every answer checked, with chaos (kill, stop, abort storm, fuzz)',
    load: () => import('./commands/soak.ts'),
  },
  stage: {
    summary: 'run one stage instance on this machine, joining a deployment over Redis',
    load: () => import('./commands/stage.ts'),
  },
  config: { summary: 'validate a stage graph (config check FILE)', load: () => import('./commands/config.ts') },
};

function usage(): string {
  const rows = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`);
  return `usage: chorus <command> [options]\n\ncommands:\n${rows.join('\n')}\n`;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h') {
    process.stdout.write(usage());
    return name ? 0 : 2;
  }
  const command = commands[name];
  if (!command) {
    process.stderr.write(`chorus: unknown command "${name}"\n\n${usage()}`);
    return 2;
  }
  const mod = await command.load();
  if (wantsHelp(rest)) {
    process.stdout.write(mod.usage);
    return 0;
  }
  try {
    return await mod.run(rest);
  } catch (err) {
    if (!isUsageError(err)) throw err;
    process.stderr.write(`chorus ${name}: ${err.message}\n\n${mod.usage}`);
    return 2;
  }
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  if (err instanceof ChorusError) {
    process.stderr.write(`chorus: ${err.code}: ${err.message}\n`);
    process.exitCode = 1;
  } else {
    throw err;
  }
}
