/**
 * Issue 44's goal "a 2-minute clip at fps 2 with its audio: the Thinker's and encoder's RSS rise by no more than their
 * configured budgets; over budget it is served with fewer frames (the fallback), never an OOM or a 500". Through the
 * HTTP front end of a real pipeline (the config's encoders and Thinker as processes): a short clip warms every process
 * up, then each stage process's peak RSS is reset (/proc/<pid>/clear_refs 5) and its RSS noted; the long clip (H.264 +
 * an AAC tone) is asked about once with `mm_processor_kwargs: {fps, use_audio_in_video: true}`, the video stage's
 * `max_frames` raised so fps binds (every 2 fps frame asked); then each process's peak RSS (VmHWM) less its RSS before
 * is its rise, set beside its budget: the Thinker's engine.media_rows_bytes, an encoder's encoder.cache_bytes (the rows
 * it keeps), plus for the vision encoder its working memory of one encode at encoder.video.max_patches_per_encode
 * (src/media/video/encodeMemory.ts's estimate; `--max-patches` sets it).
 *
 *   npx tsx bench/video/longClip.ts [--config configs/tiny-omni.yaml] [--seconds 120] [--fps 2] [--max-frames 240]
 *     [--max-patches N]
 */
import { readFile, writeFile } from 'node:fs/promises';
import { parseDocument } from 'yaml';
import { encodeWorkingBytes, parseConfig, type StageSpec } from '../../src/index.ts';
import { benchLogger } from '../benchLogger.ts';
import { gitSha } from '../common.ts';
import { pipelineFlags } from '../scriptFlags.ts';
import { memoryKiB } from '../soak/processRss.ts';
import { startInProcessServer } from '../ttfp/inProcessServer.ts';
import { benchClip, videoQuestion } from './benchClip.ts';

/** The config with the video stage's max_frames raised (so the asked fps binds), as YAML text. */
async function configText(file: string, maxFrames: number, maxPatches: number | null): Promise<string> {
  const doc = parseDocument(await readFile(file, 'utf8'));
  const stages = (doc.toJS() as { stages: { encoder?: { video?: unknown } }[] }).stages;
  stages.forEach((s, i) => {
    if (!s.encoder?.video) return;
    doc.setIn(['stages', i, 'encoder', 'video', 'max_frames'], maxFrames);
    if (maxPatches !== null) doc.setIn(['stages', i, 'encoder', 'video', 'max_patches_per_encode'], maxPatches);
  });
  return doc.toString();
}

async function ask(baseUrl: string, clip: Buffer, fps: number) {
  const res = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      ...videoQuestion(clip, 'What happens, and what do you hear?'),
      mm_processor_kwargs: { fps, use_audio_in_video: true },
    }),
  });
  const body = (await res.json()) as Record<string, unknown>;
  return { status: res.status, body };
}

async function main(): Promise<void> {
  const flags = pipelineFlags({
    seconds: 120,
    fps: 2,
    'max-frames': 240,
    'max-patches': null,
  });
  const log = benchLogger(process.stderr);
  const text = await configText(flags.config, flags['max-frames'], flags['max-patches']);
  const graph = parseConfig(text, flags.config);
  const clip = (seconds: number) => benchClip(seconds, null, { tone: true, crf: 35 });
  const [warm, long] = await Promise.all([clip(2), clip(flags.seconds)]);
  const server = await startInProcessServer(graph, log);
  try {
    const fps = flags.fps;
    const warmed = await ask(server.baseUrl, warm, fps);
    if (warmed.status !== 200) throw new Error(`warm-up: HTTP ${warmed.status} ${JSON.stringify(warmed.body)}`);
    const stages = server.engine.health().filter((h) => h.pid !== null);
    const before = new Map<string, number>();
    for (const h of stages) {
      await writeFile(`/proc/${h.pid}/clear_refs`, '5'); // the peak from here on
      before.set(h.instance!, memoryKiB(h.pid!)!.rss * 1024);
    }
    const started = performance.now();
    const answer = await ask(server.baseUrl, long, fps);
    const ms = Math.round(performance.now() - started);
    const budgetOf = (stageId: string) => budgetOfStage(graph.stages.find((s) => s.stageId === stageId)!);
    const processes = [];
    for (const h of stages) {
      const rise = memoryKiB(h.pid!)!.peak * 1024 - before.get(h.instance!)!;
      const budget = budgetOf(h.stageId);
      processes.push({
        instance: h.instance,
        riseMiB: mib(rise),
        budget: budget.setting,
        budgetMiB: mib(budget.bytes),
      });
    }
    const usage = answer.body.usage as { prompt_tokens_details?: Record<string, number> } | undefined;
    const result = {
      gitSha: gitSha(),
      config: flags.config,
      clip: { seconds: flags.seconds, bytes: long.byteLength, fps, maxFrames: flags['max-frames'] },
      status: answer.status,
      ms,
      tokens: usage?.prompt_tokens_details,
      warnings: answer.body.chorus_warnings ?? [],
      error: answer.body.error ?? null,
      processes,
      withinBudgets: processes.every((p) => p.riseMiB <= p.budgetMiB),
      goal: 'rise <= budget per process; over budget served with fewer frames; never an OOM or a 500',
    };
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await server.close();
  }
}

/** A stage's memory budget: the Thinker's rows; an encoder's cache, and a vision encoder's one encode beside it. */
function budgetOfStage(spec: StageSpec): { setting: string; bytes: number } {
  const encoder = spec.encoder;
  if (!encoder) return { setting: 'engine.media_rows_bytes', bytes: spec.engine.mediaRowsBytes ?? 512 * 1024 * 1024 };
  const model = spec.model;
  const vision = model.source === 'generated' && model.kind === 'vision_encoder' ? model.size : null;
  if (!encoder.video || !vision) return { setting: 'encoder.cache_bytes', bytes: encoder.cacheBytes };
  const patches = encoder.video.maxPatchesPerEncode;
  return {
    setting: `encoder.cache_bytes + one encode of max_patches_per_encode ${patches}`,
    bytes: encoder.cacheBytes + encodeWorkingBytes(1, patches, vision) /* as one sequence: an upper bound */,
  };
}

function mib(bytes: number): number {
  return Number((bytes / 1048576).toFixed(1));
}

await main();
