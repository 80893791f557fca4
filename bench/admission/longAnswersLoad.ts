/**
 * The long answers of bench/admission/longAnswers.ts, and the process that sends them. Forked by that script (this
 * file as the entry), the sixteen answers' clients run in a process of their own, `--load-nice` levels below it
 * (os.setPriority): clients on devices of their own take none of the server's cores, and on one machine they must not
 * take them from it either. In the harness's own process, at the server's priority and above its stages (which run
 * stage_nice below main), reading the sixteen streams' audio took the cores from the stages serving a newcomer: in
 * the one miss of ten runs captured with the scheduler's events, the harness ran 27.5 ms of CPU in that newcomer's
 * 34 ms (bench/NOTES.md, "The one miss, and the bench's own client"). The newcomers and the unloaded reference stay
 * in the harness's process, at its priority, both measured by the same client.
 */
import { setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';
import { streamChat, type StreamedChat } from '../streamChat.ts';
import type { AudioArrival } from '../ttfp/metrics.ts';

/** One long answer as its client saw it: the chat (its last try's), each audio delta's arrival, the tries refused. */
export interface LongAnswer {
  readonly chat: StreamedChat;
  readonly arrivals: readonly AudioArrival[];
  readonly retries: number;
}

/** What the harness tells the load process (its first message). */
export interface LoadCommand {
  readonly url: string;
  readonly count: number;
  readonly tokens: number;
  readonly afterMs: number;
  readonly nice: number;
}

/** What the load process tells the harness: how many answers speak now, once all have for afterMs, and the end. */
export type LoadReport =
  | { readonly speaking: number }
  | { readonly allSpeaking: true }
  | { readonly done: readonly LongAnswer[] }
  | { readonly error: string };

/**
 * Long answer `index`, retried after its Retry-After while refused; `on.speaking(+1 | -1)` as its audio starts and
 * ends, `on.spoke()` once it has spoken for `afterMs`.
 */
export async function longAnswer(
  url: string,
  index: number,
  tokens: number,
  afterMs: number,
  on: { readonly speaking?: (change: 1 | -1) => void; readonly spoke?: () => void } = {},
): Promise<LongAnswer> {
  let retries = 0;
  for (;;) {
    let firstMs: number | null = null;
    let counted = false;
    const arrivals: AudioArrival[] = [];
    const chat = await streamChat({
      url,
      maxTokens: tokens,
      prompt: `tell me a long story, number ${index}`,
      onAudio: (atMs, durationMs) => {
        arrivals.push({ atMs, durationMs });
        if (firstMs === null) on.speaking?.(1);
        firstMs ??= atMs;
        if (counted || atMs - firstMs < afterMs) return;
        counted = true;
        on.spoke?.();
      },
    });
    if (firstMs !== null) on.speaking?.(-1);
    if (chat.status !== 429) return { chat, arrivals, retries };
    retries++;
    await new Promise((resolve) => setTimeout(resolve, Number(chat.retryAfter ?? 1) * 1000));
  }
}

/** The load process: the answers of the harness's command, reported to it as they go; their ends returned. */
async function runLoad(cmd: LoadCommand): Promise<readonly LongAnswer[]> {
  setPriority(cmd.nice);
  const report = (r: LoadReport) => process.send?.(r);
  let speaking = 0;
  let spoke = 0;
  const answers = Array.from({ length: cmd.count }, (_, i) =>
    longAnswer(cmd.url, i, cmd.tokens, cmd.afterMs, {
      speaking: (change) => report({ speaking: (speaking += change) }),
      spoke: () => {
        if (++spoke === cmd.count) report({ allSpeaking: true });
      },
    }),
  );
  return Promise.all(answers);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.once('message', (cmd: LoadCommand) => {
    const last = (r: LoadReport) => process.send?.(r, () => process.disconnect()); // sent, then the channel closes
    runLoad(cmd).then(
      (done) => last({ done }),
      (err: unknown) => last({ error: String(err) }),
    );
  });
}
