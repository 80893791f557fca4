/**
 * The servers `chorus bench --config` starts run in processes of their own (bench/ttfp/serverProcess.ts): a start
 * that fails says why with its error's code and leaves no process; a server's close stops main and every stage
 * process, and so does a Ctrl-C, shared memory unlinked; a server process gone mid-run fails the bench's next question
 * instead of hanging it.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readBenchConfig } from '../../bench/ttfp/inProcessServer.ts';
import { ServerProcess } from '../../bench/ttfp/serverProcess.ts';
import { defaultConfigPath, repoRoot } from '../../src/config/paths.ts';
import { ErrorCodes } from '../../src/common/errors.ts';
import { waitFor } from '../helpers/engine.ts';
import { isAlive, segmentsOf } from '../helpers/processes.ts';

/** Main's pid and its stage processes' (as its /health names them). */
async function pidsOf(server: ServerProcess): Promise<number[]> {
  const health = (await (await fetch(`${server.baseUrl}/health`)).json()) as { stages: { pid: number | null }[] };
  return [server.pid, ...health.stages.flatMap((s) => (s.pid === null ? [] : [s.pid]))];
}

/** A pipeline of one stage (the Thinker): what is tested here is the processes' lives, the fewer the faster. */
const TEXT_ONLY = path.join(repoRoot(), 'configs', 'text-only.yaml');

describe('a bench server in a process of its own', () => {
  it('refuses a config its process cannot start, with the config error, and exits', async () => {
    const config = await readBenchConfig(defaultConfigPath());
    const broken = { ...config, text: `${config.text}\nno_such_key: 1\n` };
    const failure = ServerProcess.start(broken, { marks: false });
    await expect(failure).rejects.toMatchObject({ code: ErrorCodes.CONFIG_INVALID });
    await expect(failure).rejects.toThrow(/no_such_key/);
  });

  it('serves, and its close stops main and every stage process', async () => {
    const server = await ServerProcess.start(await readBenchConfig(TEXT_ONLY), { marks: true });
    const pids = await pidsOf(server);
    expect(pids.length).toBe(2); // main and the Thinker
    // Nothing was asked of it yet: nothing is collected, and asking does not disturb it.
    await expect(server.collect(['nobody'])).resolves.toMatchObject({ marks: [] });
    await server.close();
    expect(pids.filter(isAlive)).toEqual([]);
  }, 120_000);

  it('stops its stages in order on a Ctrl-C (SIGINT to the group): no process or shared memory left', async () => {
    const server = await ServerProcess.start(await readBenchConfig(TEXT_ONLY), { marks: false });
    const pids = await pidsOf(server);
    expect(segmentsOf(server.pid).length).toBeGreaterThan(0);
    for (const pid of pids) process.kill(pid, 'SIGINT');
    await server.close(); // the process exits on its own: nothing is asked of it
    await waitFor('every process the server started to exit', () => !pids.some(isAlive));
    expect(segmentsOf(server.pid)).toEqual([]);
  }, 120_000);

  it('fails a question once its process is gone, and closes at once', async () => {
    const server = await ServerProcess.start(await readBenchConfig(TEXT_ONLY), { marks: false });
    const pids = await pidsOf(server);
    process.kill(server.pid, 'SIGKILL');
    await expect(server.collect(['r'])).rejects.toMatchObject({ code: ErrorCodes.STAGE_FAILED });
    await server.close();
    // Its stage processes see their parent gone and stop on their own.
    await waitFor('every process the server started to exit', () => !pids.some(isAlive));
  }, 120_000);
});
