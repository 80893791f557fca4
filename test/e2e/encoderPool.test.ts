/**
 * The encoder pool of configs/epd.yaml over a real redis-server: `chorus serve` (two Thinker instances, Talker and
 * Code2Wav local) and remote encoders joined with `chorus stage` (two audio, one image), each in its own IPC and
 * mount namespace. Any Thinker takes rows from any encoder; a killed encoder costs only its requests, with the
 * configured failure policy; the router sends a request past a Thinker busy with a long prefill. The text_only case
 * runs on a smaller deployment of the same file: only what its audio requests use.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import {
  chat,
  health,
  readyInstances,
  startServe,
  startStage,
  type Serve,
  type Started,
} from '../helpers/deployment.ts';
import { pngBytes, wavBytes } from '../helpers/media.ts';
import { redisForSuite } from '../helpers/redisServer.ts';
import { tempDir } from '../helpers/tempDir.ts';

const EPD = join(import.meta.dirname, '..', '..', 'configs', 'epd.yaml');

function audioMessage(seconds: number, seed: number, text = 'What is said here?') {
  const data = Buffer.from(wavBytes(seconds, 24000, seed)).toString('base64');
  return [
    {
      role: 'user',
      content: [
        { type: 'text', text },
        { type: 'input_audio', input_audio: { data, format: 'wav' } },
      ],
    },
  ];
}

function imageMessage(size: number, seed: number) {
  const url = `data:image/png;base64,${Buffer.from(pngBytes(size, size, seed)).toString('base64')}`;
  return [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'Describe it' },
        { type: 'image_url', image_url: { url } },
      ],
    },
  ];
}

/** The value of a Prometheus series (summed over the lines that match every label given), 0 when absent. */
async function metric(url: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/**
 * configs/epd.yaml with on_encoder_failure: text_only and only the stages of a text answer to audio: the two Thinkers
 * and the audio encoders (no image encoder, no Talker and Code2Wav: a text answer never reaches them).
 */
function textOnlyAudioConfig(): string {
  const doc = parse(readFileSync(EPD, 'utf8')) as {
    on_encoder_failure: string;
    connectors: Record<string, unknown>;
    stages: { stage_id: string; inputs?: { from: string }[] }[];
  };
  expect(doc.on_encoder_failure).toBe('fail');
  doc.on_encoder_failure = 'text_only';
  doc.stages = doc.stages.filter((s) => s.stage_id === 'thinker' || s.stage_id === 'audio-encoder');
  const thinker = doc.stages.find((s) => s.stage_id === 'thinker')!;
  thinker.inputs = thinker.inputs!.filter((i) => i.from === 'audio-encoder');
  delete doc.connectors.shm; // only the Thinker -> Talker -> Code2Wav edges were on it
  const config = join(tempDir('epd'), 'epd-text-only-audio.yaml');
  writeFileSync(config, stringify(doc));
  return config;
}

/**
 * A deployment of `config`: serve and the encoders of `stages` (audio: a1 and a2, image: i1), started beside it (main
 * boots them once it is up on Redis); resolved once all `instances` are ready.
 */
async function deploy(
  config: string,
  env: Record<string, string>,
  stages: readonly string[],
  instances: number,
): Promise<{ serve: Serve; encoders: Map<string, Started> }> {
  const encoders = new Map<string, Started>();
  for (const [stage, name] of [
    ['audio-encoder', 'a1'],
    ['audio-encoder', 'a2'],
    ['image-encoder', 'i1'],
  ])
    if (stages.includes(stage))
      encoders.set(`${stage}#${name}`, startStage(config, stage, name, env, { isolated: true }));
  const serve = await startServe(config, env);
  await readyInstances(serve, instances, 90_000);
  return { serve, encoders };
}

/**
 * Six 40 s clips at once, one encoder instance SIGKILLed while it has some in flight: those requests get the
 * policy within 3 s, the rest answer; then the pool (one audio encoder left) serves the next request.
 */
async function killMidRequest(serve: Serve, encoders: Map<string, Started>) {
  let started = 0;
  const answers = Array.from({ length: 6 }, (_, i) =>
    chat(serve.url, '', { messages: audioMessage(40, 20 + i), modalities: ['text'], max_tokens: 8 }, () => started++),
  );
  let victim: { instance?: string; pid: number | null; in_flight: number } | undefined;
  await expect
    .poll(
      async () => {
        victim = (await health(serve.url)).stages.find(
          (s) => s.stage_id === 'audio-encoder' && s.in_flight > 0 && s.instance === 'audio-encoder#a1',
        );
        return victim !== undefined;
      },
      { timeout: 30_000, interval: 20 },
    )
    .toBe(true);
  const killedAt = Date.now();
  process.kill(victim!.pid!, 'SIGKILL');
  await encoders.get('audio-encoder#a1')!.exited;
  const done = await Promise.all(answers);
  expect(started).toBeGreaterThan(0);
  // The instance left is in the pool (on a loaded machine it may have missed a heartbeat and rejoined meanwhile).
  await expect
    .poll(async () => (await health(serve.url)).stages.find((s) => s.instance === 'audio-encoder#a2')?.status, {
      timeout: 30_000,
      interval: 50,
    })
    .toBe('ready');
  const next = await chat(serve.url, '', { messages: audioMessage(5, 99), modalities: ['text'], max_tokens: 8 });
  return { done, killedAt, next };
}

describe('encoder pool (configs/epd.yaml)', () => {
  const suite = redisForSuite();

  it('any Thinker takes rows of any encoder; routing skips a busy Thinker; a killed encoder: fail', async () => {
    // 2 Thinkers, Talker, Code2Wav, 2 audio encoders, 1 image encoder.
    const { serve, encoders } = await deploy(EPD, suite.env(), ['audio-encoder', 'image-encoder'], 7);
    const stages = await (await fetch(`${serve.url}/v1/stages`)).json();
    expect((stages as { routing: string }).routing).toBe('ttft');

    // Eight media requests at once: both audio encoders and both Thinkers get work, and every answer arrives.
    const burst = await Promise.all([
      ...Array.from({ length: 6 }, (_, i) =>
        chat(serve.url, '', { messages: audioMessage(10, i + 1), modalities: ['text'], max_tokens: 8 }),
      ),
      ...[224, 448].map((px, i) =>
        chat(serve.url, '', { messages: imageMessage(px, i + 1), modalities: ['text'], max_tokens: 8 }),
      ),
    ]);
    for (const a of burst) expect(a.error).toBeNull();
    for (const instance of ['audio-encoder#a1', 'audio-encoder#a2', 'image-encoder#i1'])
      expect(await metric(serve.url, 'chorus_encoder_cache_misses_total', { stage: instance })).toBeGreaterThan(0);
    for (const instance of ['thinker#0', 'thinker#1'])
      expect(await metric(serve.url, 'chorus_stage_batch_size_count', { stage: instance })).toBeGreaterThan(0);

    // A long prompt prefilling on one Thinker: the next request goes to the other.
    const long = chat(serve.url, 'x'.repeat(2500), { modalities: ['text'], max_tokens: 600, ignore_eos: true });
    let busy: string | undefined;
    await expect
      .poll(
        async () => {
          busy = (await health(serve.url)).stages.find((s) => s.stage_id === 'thinker' && s.in_flight > 0)?.instance;
          return busy;
        },
        { timeout: 30_000, interval: 5 },
      )
      .toBeDefined();
    const short = chat(serve.url, 'Hello', { modalities: ['text'], max_tokens: 300, ignore_eos: true });
    await expect
      .poll(
        async () =>
          (await health(serve.url)).stages.filter((s) => s.stage_id === 'thinker').map((s) => s.in_flight > 0),
        { timeout: 30_000, interval: 5 },
      )
      .toEqual([true, true]);
    for (const a of await Promise.all([long, short])) expect(a.error).toBeNull();
    expect(busy).toMatch(/^thinker#[01]$/);
    expect(await metric(serve.url, 'chorus_route_decisions_total', { policy: 'ttft' })).toBeGreaterThanOrEqual(10);
    expect(await metric(serve.url, 'chorus_route_ttft_error_seconds_count')).toBeGreaterThanOrEqual(10);

    // on_encoder_failure: fail: the killed instance's requests end with ENCODER_FAILED naming it, within 3 s.
    const { done, killedAt, next } = await killMidRequest(serve, encoders);
    const failed = done.filter((a) => a.error !== null);
    expect(failed.length).toBeGreaterThan(0);
    for (const a of failed) {
      expect(a.error!.code).toBe('CHORUS_ERR_ENCODER_FAILED');
      expect(a.error!.message).toContain('audio-encoder#a1');
      expect(a.endedAtMs - killedAt).toBeLessThan(3000);
    }
    for (const a of done.filter((x) => x.error === null)) expect(a.text.length).toBeGreaterThan(0);
    expect(next.error).toBeNull();
    expect(next.text.length).toBeGreaterThan(0);
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
  }, 300_000);

  it('on_encoder_failure: text_only: a killed encoder costs its requests their audio, not their answer', async () => {
    // 2 Thinkers, 2 audio encoders.
    const { serve, encoders } = await deploy(textOnlyAudioConfig(), suite.env(), ['audio-encoder'], 4);
    const { done, killedAt, next } = await killMidRequest(serve, encoders);
    // Every request answers; those whose clip died with the encoder say so, and answer within 5 s of the kill: the
    // loss is known within ~2.5 s (the heartbeat TTL after the last beat), then the Thinker prefills the prompt
    // without the clip beside the other requests' 40 s clips (3.2 s in all once, under the whole suite's load).
    for (const a of done) expect(a.error).toBeNull();
    const dropped = done.filter((a) => a.warnings.some((w) => /audio/.test(w)));
    expect(dropped.length).toBeGreaterThan(0);
    for (const a of dropped) expect(a.firstTextAtMs! - killedAt).toBeLessThan(5000);
    expect(next.error).toBeNull();
    expect(next.text.length).toBeGreaterThan(0);
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
  }, 300_000);
});
