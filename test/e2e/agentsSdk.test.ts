/**
 * The OpenAI Agents SDK (@openai/agents-realtime) against Chorus with its defaults untouched: a RealtimeAgent with
 * a function tool, a RealtimeSession over the SDK's WebSocket transport, url pointed at the server. Its first
 * session.update carries semantic_vad, gpt-4o-mini-transcribe, the SDK's default model name (served here through
 * model_aliases) and then tracing "auto"; the user speaks (espeak-ng), Smart Turn v3 ends the turn, the tool is
 * called and its output goes back, and the answer after it is spoken.
 *
 * With random weights the model never chooses a call on its own, so the session starts with toolChoice "required"
 * (as test/e2e/realtimeTools.test.ts forces calls) and the tool, once run, sets it back to "auto" so the answer that
 * follows is speech rather than another call.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DEFAULT_OPENAI_REALTIME_MODEL,
  RealtimeAgent,
  RealtimeSession,
  tool,
  type TransportEvent,
} from '@openai/agents-realtime';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { z } from 'zod';
import type { SessionResource } from '../../src/server/realtime/SessionResource.ts';
import { concatPcm, quiet, speak } from '../helpers/speech.ts';
import { servePipeline } from '../helpers/servePipeline.ts';

/** The server events' fields this test reads (the SDK types its transport events loosely). */
interface WireEvent {
  readonly type: string;
  readonly session?: SessionResource;
  readonly name?: string;
  readonly item?: { readonly type: string };
  readonly error?: { readonly message: string };
  readonly delta?: string;
}
const wire = (e: TransportEvent) => e as unknown as WireEvent;

let url = '';
let close: () => Promise<void> = async () => {};
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'chorus-agents-'));
  const config = join(dir, 'agents.yaml');
  // tiny-omni (speech in and out), answering to the SDK's default model name.
  const base = readFileSync(join(import.meta.dirname, '..', '..', 'configs', 'tiny-omni.yaml'), 'utf8');
  writeFileSync(config, `${base}\nmodel_aliases: [${DEFAULT_OPENAI_REALTIME_MODEL}]\n`);
  const served = await servePipeline(config);
  url = served.wsUrl;
  close = async () => {
    await served.close();
    rmSync(dir, { recursive: true, force: true });
  };
}, 120_000);
afterAll(() => close());

describe('OpenAI Agents SDK (RealtimeSession over WebSocket) with its defaults', () => {
  it('connects, hears the user, detects the turn, calls the tool, returns its output and speaks on', async () => {
    const calls: string[] = [];
    let session!: RealtimeSession;
    const getWeather = tool({
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: z.object({ city: z.string().max(16) }), // bounded: random weights would write to the token cap
      execute: async ({ city }) => {
        calls.push(city);
        session.transport.updateSessionConfig({ toolChoice: 'auto' });
        return `Sunny and 21 degrees in ${city}`;
      },
    });
    const agent = new RealtimeAgent({ name: 'Assistant', instructions: 'Answer briefly.', tools: [getWeather] });
    session = new RealtimeSession(agent, { transport: 'websocket', config: { toolChoice: 'required' } });
    const events: TransportEvent[] = [];
    const errors: unknown[] = [];
    const seen = (match: (e: TransportEvent) => boolean) =>
      new Promise<TransportEvent>((resolve) => {
        const found = events.find(match);
        if (found) return resolve(found);
        const on = (e: TransportEvent) => match(e) && (session.off('transport_event', on), resolve(e));
        session.on('transport_event', on);
      });
    session.on('transport_event', (e) => events.push(e));
    onTestFailed(() =>
      console.log(JSON.stringify(events.map((e) => [e.type, wire(e).error?.message ?? wire(e).delta?.length]))),
    );
    session.on('error', (e) => errors.push(e));
    const updated = (match: (session: SessionResource) => boolean) =>
      seen((e) => e.type === 'session.updated' && match(wire(e).session!)).then((e) => wire(e).session!);
    const configured = updated((s) => s.model === DEFAULT_OPENAI_REALTIME_MODEL);
    const traced = updated((s) => s.tracing === 'auto');
    await session.connect({ apiKey: 'none', url });
    // The SDK's whole config (refused whole, nothing of it would be in effect).
    const first = await configured;
    expect(first.audio.input.turn_detection).toMatchObject({
      type: 'semantic_vad',
      eagerness: 'auto',
      chorus_end_of_turn: { model: 'smart-turn-v3', threshold: 0.5 },
    });
    expect(first.audio.input.transcription?.model).toBe('gpt-4o-mini-transcribe');
    expect(first.tools.map((t) => t.name)).toEqual(['get_weather']);
    expect(first.instructions).toBe('Answer briefly.');
    // Tracing "auto", taken and said to be off: this server exports no traces.
    expect((await traced).chorus_tracing).toMatch(/^off/);

    const speech = concatPcm(quiet(400), speak('What is the weather like in Paris?'), quiet(1200));
    for (let at = 0; at < speech.length; at += 2400) {
      const part = speech.slice(at, at + 2400);
      session.sendAudio(part.buffer);
    }
    await seen((e) => e.type === 'input_audio_buffer.speech_stopped');
    const called = await seen((e) => e.type === 'response.function_call_arguments.done');
    expect(wire(called).name).toBe('get_weather');
    // The SDK ran the tool and sent its output; the answer after it is spoken.
    await seen((e) => e.type === 'conversation.item.added' && wire(e).item?.type === 'function_call_output');
    await seen((e) => e.type === 'response.output_audio.delta');
    expect(calls).toHaveLength(1);
    expect(errors.filter((e) => !/transcri/.test(JSON.stringify(e)))).toEqual([]);
    session.close();
  }, 30_000);
});
