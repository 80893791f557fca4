/**
 * ttfp_target_ms through the official openai SDK's Realtime client, against the real pipeline: a target the
 * pipeline cannot meet is reported in response.done (chorus_warnings) and in /metrics, a reachable one is not; a
 * response's target overrides the session's. The playback slack of every later packet reaches /metrics too.
 */
import https from 'node:https';
import { describe, expect, it } from 'vitest';
import { sdkSession, tlsPipelineForFile } from '../helpers/realtimeSdk.ts';

const pipeline = tlsPipelineForFile('tiny-omni-text-in.yaml');

function metrics(): Promise<string> {
  return new Promise((resolve, reject) => {
    https
      .get(`${pipeline().baseURL.replace(/\/v1$/, '')}/metrics`, { ca: pipeline().ca }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

const counter = (text: string, name: string): number =>
  Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);

describe('ttfp_target_ms', () => {
  it('reports a missed target in response.done and /metrics; a response overrides the session target', async () => {
    const before = await metrics();
    const { rt, events, next } = await sdkSession(pipeline());
    // An impossible session-wide target: 1 ms from the request to the first audio packet.
    rt.send({ type: 'session.update', session: { type: 'realtime', ttfp_target_ms: 1 } } as never);
    await next((e) => e.type === 'session.updated');
    const ask = async (response: Record<string, unknown>) => {
      const done = next((e) => e.type === 'response.done', events.length);
      rt.send({
        type: 'response.create',
        response: {
          conversation: 'none',
          input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Tell me about the sea' }] }],
          output_modalities: ['audio'],
          max_output_tokens: 8,
          ...response,
        },
      } as never);
      return (await done).response as { status: string; chorus_warnings?: string[] };
    };
    const missed = await ask({});
    expect(missed.status).not.toBe('failed');
    expect(missed.chorus_warnings).toEqual([
      expect.stringMatching(/^ttfp_target_missed: .* over its ttfp_target_ms of 1/),
    ]);
    const met = await ask({ ttfp_target_ms: 60_000 });
    expect(met.status).not.toBe('failed');
    expect(met.chorus_warnings).toBeUndefined();
    rt.close();

    const after = await metrics();
    const delta = (name: string) => counter(after, name) - counter(before, name);
    expect(delta('chorus_ttfp_target_total{result="missed"}')).toBe(1);
    expect(delta('chorus_ttfp_target_total{result="met"}')).toBe(1);
    // 8 tokens -> 16 frames -> first chunk + later ones: every later packet's slack is observed.
    expect(delta('chorus_playback_slack_seconds_count')).toBeGreaterThanOrEqual(2);
  }, 90_000);
});
