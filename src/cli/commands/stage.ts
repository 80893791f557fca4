/**
 * `chorus stage --config FILE --stage ID [--name NAME] [--redis URL] [--drain-timeout S]`: one stage instance on this
 * machine, joining the deployment of FILE over the control plane (src/control/ControlPlane.ts: Redis today). It refuses
 * a deployment that runs another config, loads its own model (this host's paths), serves until SIGTERM/SIGINT, then
 * drains its requests and leaves.
 */
import { hostname } from 'node:os';
import { commandFlags } from '../commandFlags.ts';
import { ChorusError, ErrorCodes } from '../../common/errors.ts';
import { logger } from '../../common/log.ts';
import { intFlag, UsageError } from '../../common/cliArgs.ts';

export const usage = `usage: chorus stage --config FILE --stage ID [--name NAME] [--redis URL] [--drain-timeout S]

Runs one instance of stage ID of FILE on this machine and joins the deployment that \`chorus serve --config FILE\`
runs elsewhere, over the Redis of the stage's redis connector. The stage must be joinable: every edge touching it
on a redis connector (placement: remote, or a local stage whose edges all are).
  --name NAME          instance name, unique in the deployment (default: <hostname>-<pid>); it joins as ID#NAME.
                       A name a live instance holds is refused (CHORUS_ERR_INSTANCE_NAME_TAKEN); a restarted
                       instance takes its name back once the old one's lease lapses (5 s)
  --redis URL          redis://, rediss:// or redis+cluster:// URL (env CHORUS_REDIS_URL; default: the config's)
  --drain-timeout S    on SIGTERM/SIGINT, seconds running requests may take to finish (30)
`;

export async function run(argv: string[]): Promise<number> {
  const values = commandFlags(argv, {
    stage: { type: 'string' },
    name: { type: 'string' },
    redis: { type: 'string' },
    'drain-timeout': { type: 'string', default: '30' },
  });
  if (!values.stage) throw new UsageError('--stage ID is required (the stage_id of the stage to run)');
  const name = values.name ?? `${hostname()}-${process.pid}`;
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name))
    throw new UsageError(`--name ${name}: use letters, digits, ".", "_" or "-"`);
  const drainMs = 1000 * intFlag('--drain-timeout', values['drain-timeout'])!;
  if (values.redis) process.env.CHORUS_REDIS_URL = values.redis; // the connector options read it at load
  // Loaded once the flags are checked: --help and a bad flag answer without the seconds the stage's modules take.
  const [{ loadConfig }, { controlPlaneOf, joinDeployment }, { createStage }, { runStageProcess }] = await Promise.all([
    import('../../config/loadConfig.ts'),
    import('../../control/ControlPlane.ts'),
    import('../../../stages/registry.ts'),
    import('../../worker/stageMain.ts'),
  ]);
  const graph = await loadConfig(values.config);
  const stageIndex = graph.stages.findIndex((s) => s.stageId === values.stage);
  if (stageIndex < 0)
    throw new UsageError(`--stage ${values.stage} is not in ${graph.file} (${graph.stages.map((s) => s.stageId)})`);
  const spec = graph.stages[stageIndex];
  const site = controlPlaneOf(graph);
  if (!spec.joinable || !site)
    throw new ChorusError(
      ErrorCodes.CONFIG_INVALID,
      `stage ${spec.stageId} cannot run on another machine: its edges are not all on redis connectors; give it ` +
        'placement: remote (and redis connectors on its inputs) in the config',
    );
  const instance = `${spec.stageId}#${name}`;
  const log = logger.child({ stage: instance });
  const channel = await joinDeployment(site, {
    graph,
    spec,
    instance,
    // Main's boot, with this machine's graph: same config (hash checked), but this host's model paths.
    localBoot: (boot) => ({ ...boot, graph, stageIndex, instance }),
    onRefused: (reason, refused) => {
      log.error({ reason }, 'the deployment refused this instance');
      process.stderr.write(`chorus stage: refused: ${reason}\n`);
      process.exitCode = 2;
      refused.close();
    },
  });
  runStageProcess(channel, createStage, { ownMachine: true });
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(130);
    stopping = true;
    log.info({ signal, drainMs }, 'draining, then leaving the deployment');
    // Before main booted it there is nothing to drain.
    if (!channel.booted) return channel.close();
    channel.inject({ type: 'shutdown', drainMs });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.stdout.write(`chorus: stage ${instance} joining the deployment on ${channel.where}\n`);
  // Runs until it has drained (or was refused): the channel's close exits the process.
  return new Promise<number>(() => {});
}
