/** PromptPositions: each item counted once with the engine's own template, recounted when its text changes. */
import { describe, expect, it } from 'vitest';
import type { ChatMessage, Engine } from '../../src/common/engine.ts';
import type { StageGraph } from '../../src/common/graph.ts';
import { Conversation, type StoredItem } from '../../src/server/realtime/Conversation.ts';
import { PromptPositions } from '../../src/server/realtime/PromptPositions.ts';

/** An engine whose prompt is 3 positions of header plus 2 a turn plus one a character; it counts its calls. */
function countingEngine(maxPositions: number | null) {
  const model =
    maxPositions === null ? { source: 'file' } : { source: 'generated', kind: 'thinker', size: { maxPositions } };
  const graph = {
    entryStageId: 'thinker',
    stages: [{ stageId: 'thinker', kind: 'thinker', model }],
  } as unknown as StageGraph;
  const calls: (readonly ChatMessage[])[] = [];
  const engine = {
    graph,
    promptPositions(messages: readonly ChatMessage[]) {
      calls.push(messages);
      return 3 + messages.reduce((n, m) => n + 2 + (m.content as string).length, 0);
    },
  } as unknown as Engine & { graph: StageGraph };
  return { engine, calls };
}

const text = (id: string, t: string, role: StoredItem['role'] = 'user'): StoredItem => ({
  id,
  role,
  parts: [{ type: 'input_text', text: t, media: null }],
});

describe('PromptPositions', () => {
  it('counts what an item adds to a prompt, once', () => {
    const { engine, calls } = countingEngine(4096);
    const positions = PromptPositions.of(engine, null)!;
    expect(positions.maxPositions).toBe(4096);
    const item = text('a', 'hello');
    expect(positions.item(item)).toBe(7); // 2 for the turn, 5 characters
    expect(positions.item(item)).toBe(7);
    expect(calls).toHaveLength(2); // [item] and the empty prompt, each once
    expect(positions.instructions('be brief')).toBe(3 + 2 + 8);
    expect(positions.instructions('')).toBe(3);
    expect(positions.item(text('empty', ''))).toBe(0); // left out of prompts: nothing to count
  });

  it('recounts an item whose text changed (an answer finished, a truncated spoken answer)', () => {
    const { engine } = countingEngine(4096);
    const positions = PromptPositions.of(engine, null)!;
    const conversation = new Conversation({ maxItems: 10, maxMediaBytes: 1000 });
    conversation.insert({ id: 'ans', role: 'assistant', parts: [] });
    const item = conversation.get('ans')!;
    expect(positions.item(item)).toBe(0); // in progress: empty
    conversation.setText('ans', 'the whole answer', true);
    expect(positions.item(conversation.get('ans')!)).toBe(2 + 16);
    conversation.setText('ans', 'the whole', true);
    expect(positions.item(conversation.get('ans')!)).toBe(2 + 9);
  });

  it('starts over for another graph (a reload may bring another tokenizer), and is null without a count', () => {
    const { engine, calls } = countingEngine(4096);
    const first = PromptPositions.of(engine, null)!;
    expect(PromptPositions.of(engine, first)).toBe(first);
    const item = text('a', 'hello');
    first.item(item);
    const reloaded = { ...engine, graph: { ...engine.graph } } as Engine;
    const second = PromptPositions.of(reloaded, first)!;
    expect(second).not.toBe(first);
    const before = calls.length;
    expect(second.item(item)).toBe(7);
    expect(calls.length).toBeGreaterThan(before);

    expect(PromptPositions.of(countingEngine(null).engine, null)).toBeNull(); // positions unknown
    expect(PromptPositions.of({ ...engine, promptPositions: undefined } as Engine, null)).toBeNull();
  });
});
