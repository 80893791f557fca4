/**
 * TruncationAhead with a counting engine (one position a word, two a message): once an answer's audio is out, a
 * conversation whose next turn would cross the limit gets the items truncation would drop chosen now, and a warm-up
 * request for the prompt the next turn starts with (the kept items through this turn's user item); a conversation
 * with room for the next turn gets neither, and the next turn stops the warm-up.
 */
import { ReplaySubject } from 'rxjs';
import type { FastifyBaseLogger } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { ChatMessage, Engine, GenerateRequest, OutputEvent, RequestHandle } from '../../src/common/engine.ts';
import { MediaChecker } from '../../src/server/media/MediaChecker.ts';
import type { StoredItem } from '../../src/server/realtime/Conversation.ts';
import { PromptPositions } from '../../src/server/realtime/PromptPositions.ts';
import type { SessionState } from '../../src/server/realtime/serverEvents.ts';
import { NO_TOOLS } from '../../src/server/realtime/realtimeTools.ts';
import { TruncationAhead } from '../../src/server/realtime/TruncationAhead.ts';
import { PrefillSlots } from '../../src/voice/index.ts';
import { configWith } from '../helpers/engine.ts';

const MAX_POSITIONS = 256;
const graph = configWith('tiny-omni-text-in.yaml', {
  'model: {} # the preset above': `model: {max_positions: ${MAX_POSITIONS}} # the preset above`,
});

const words = (m: ChatMessage) => (typeof m.content === 'string' ? m.content.split(' ').length : 0);

class CountingEngine {
  readonly graph = graph;
  readonly requests: GenerateRequest[] = [];
  readonly cancelled: string[] = [];
  promptPositions(messages: readonly ChatMessage[]): number {
    return messages.reduce((n, m) => n + 2 + words(m), 1);
  }
  generate(request: GenerateRequest): RequestHandle {
    this.requests.push(request);
    const events = new ReplaySubject<OutputEvent>();
    const requestId = request.requestId!;
    const prompt = { text: 0, audio: 0, image: 0, video: 0 };
    return { requestId, prompt, events, pause() {}, resume() {}, cancel: () => this.cancelled.push(requestId) };
  }
}

const say = (id: string, role: 'user' | 'assistant', n: number): StoredItem => ({
  id,
  role,
  parts: [{ type: role === 'user' ? 'input_text' : 'output_text', text: Array(n).fill('w').join(' '), media: null }],
});

function setup(turns: number) {
  const engine = new CountingEngine();
  const items: StoredItem[] = [];
  for (let i = 0; i < turns; i++) items.push(say(`u${i}`, 'user', 20), say(`a${i}`, 'assistant', 10));
  items.push(say(`u${turns}`, 'user', 20), { id: `a${turns}`, role: 'assistant', parts: [] }); // this turn's
  const state = {
    instructions: '',
    maxOutputTokens: 16,
    truncation: 'auto',
    generation: {},
    outputModalities: ['audio'],
    tools: NO_TOOLS,
  };
  const ctx = {
    state: state as unknown as SessionState,
    items,
    media: new MediaChecker(graph),
    tokenLimits: { cap: 4096, stageDefault: 256, promptPositions: MAX_POSITIONS },
    prefixKey: undefined,
    positions: PromptPositions.of(engine as unknown as Engine, null),
  };
  const log = { debug() {} } as unknown as FastifyBaseLogger;
  const ahead = new TruncationAhead(engine as unknown as Engine, new PrefillSlots(), log, 'sess_1');
  return { engine, ctx, ahead };
}

describe('TruncationAhead', () => {
  it('drops now what the next turn would, and warms the prompt the next turn starts with', () => {
    // 7 turns of ~36 positions + this one: the next turn (another ~36) crosses the ~240 allowed.
    const { engine, ctx, ahead } = setup(6);
    ahead.plan(ctx);
    expect(engine.requests).toHaveLength(1);
    const warm = engine.requests[0];
    const drop = ahead.takeDrop();
    expect(drop.length).toBeGreaterThan(0);
    expect(drop).toEqual(ctx.items.slice(0, drop.length).map((it) => it.id)); // the oldest, in order
    // The warm prompt is the kept conversation through this turn's user item, as the next turn will send it.
    const kept = ctx.items.slice(drop.length, -1);
    expect(warm.messages.map((m) => m.role)).toEqual(kept.map((it) => it.role));
    expect(warm.modalities).toEqual(['text', 'audio']);
    expect(ahead.takeDrop()).toEqual([]); // once
    ahead.stop();
    expect(engine.cancelled).toEqual([warm.requestId]);
  });

  it('does nothing while the next turn fits', () => {
    const { engine, ctx, ahead } = setup(2);
    ahead.plan(ctx);
    expect(engine.requests).toHaveLength(0);
    expect(ahead.takeDrop()).toEqual([]);
  });

  it('does nothing with truncation disabled', () => {
    const { engine, ctx, ahead } = setup(6);
    ctx.state.truncation = 'disabled';
    ahead.plan(ctx);
    expect(engine.requests).toHaveLength(0);
    expect(ahead.takeDrop()).toEqual([]);
  });
});
