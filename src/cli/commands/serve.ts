/**
 * `chorus serve --config FILE [--host 127.0.0.1] [--port 8000] [--api-key KEY] [--allowed-origin URL]...
 *               [--max-sessions N] [--max-response-tokens N] [--media-url-allow PREFIX]...`
 * --media-url-allow lets image_url name remote URLs under PREFIX (e.g. https://cdn.example.com/images/); without
 * it remote media URLs are refused and clients send media inline (data: URLs, base64 audio).
 * Loads the stage graph, starts the pipeline, serves HTTP + WebSocket, prints the URL. SIGINT/SIGTERM close the
 * server first (sessions end, in-flight requests are cancelled), then the engine (stage processes stop, shared
 * memory is unlinked).
 */
import { parseArgs } from 'node:util';
import { defaultConfigPath, loadConfig } from '../../config/loadConfig.ts';
import { Orchestrator } from '../../engine/Orchestrator.ts';
import { ChorusError, ErrorCodes } from '../../errors.ts';
import { startServer } from '../../server/app.ts';
import { checkMediaUrlAllowList } from '../../server/options.ts';
import { shutdownOnSignal } from '../shutdownOnSignal.ts';

function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new ChorusError(ErrorCodes.REQUEST_INVALID, `${flag} must be a non-negative integer, got "${value}"`);
  return n;
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string', default: defaultConfigPath() },
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '8000' },
      'api-key': { type: 'string' },
      'allowed-origin': { type: 'string', multiple: true },
      'max-sessions': { type: 'string' },
      'max-response-tokens': { type: 'string' },
      'media-url-allow': { type: 'string', multiple: true },
    },
  });
  const port = positiveInt(values.port, '--port')!;
  const mediaUrlAllowList = checkMediaUrlAllowList(values['media-url-allow'] ?? []); // before the pipeline's seconds of start-up
  const graph = await loadConfig(values.config!);
  const engine = await Orchestrator.start(graph);
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer(engine, {
      host: values.host,
      port,
      ...(values['api-key'] !== undefined ? { apiKey: values['api-key'] } : {}),
      allowedOrigins: values['allowed-origin'] ?? [],
      maxSessions: positiveInt(values['max-sessions'], '--max-sessions'),
      maxResponseTokens: positiveInt(values['max-response-tokens'], '--max-response-tokens'),
      mediaUrlAllowList,
    });
  } catch (err) {
    await engine.close(0);
    const code = (err as { code?: string }).code;
    if (code === 'EADDRINUSE' || code === 'EACCES') {
      throw new ChorusError(ErrorCodes.INTERNAL, `cannot listen on ${values.host}:${port} (${code}): choose another --port or --host`, { cause: err });
    }
    throw err;
  }
  const { app, url } = server;
  shutdownOnSignal(async () => {
    await app.close(); // closes realtime sockets and waits for HTTP responses: their requests are cancelled
    await engine.close();
  });
  const wsUrl = url.replace(/^http/, 'ws');
  process.stdout.write(`chorus: serving ${url}  (playground ${url}/, realtime ${wsUrl}/v1/realtime, OpenAI API ${url}/v1)\n`);
  // Runs until a signal: shutdownOnSignal exits the process once both are closed.
  return new Promise<number>(() => {});
}
