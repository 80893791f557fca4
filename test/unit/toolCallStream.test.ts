/** Hermes-format tool calls read out of streamed text, however the text is cut into deltas. */
import { describe, expect, it } from 'vitest';
import { ToolCallAssembly, ToolCallStream } from '../../src/server/chat/toolCallStream.ts';
import { toolCallText } from '../../src/tokenizer/toolCalls.ts';

const ARGS_A = '{"city": "Paris", "days": 2}';
const ARGS_B = '{"nested": {"x": [1, {"y": "}\\n</tool_call>?"}]}}';
const TEXT = `Let me check. ${toolCallText('get_weather', ARGS_A)}\n${toolCallText('lookup', ARGS_B)}`;

function assemble(deltas: readonly string[]): ToolCallAssembly {
  const stream = new ToolCallStream();
  const assembly = new ToolCallAssembly();
  for (const d of deltas) assembly.add(stream.push(d));
  assembly.add(stream.finish());
  return assembly;
}

describe('ToolCallStream', () => {
  it.each([1, 2, 3, 7, 1000])('reads content and two calls from deltas of %i characters', (size) => {
    const deltas = TEXT.match(new RegExp(`[\\s\\S]{1,${size}}`, 'g'))!;
    const a = assemble(deltas);
    expect(a.content).toBe('Let me check.');
    expect(a.calls.map((c) => [c.name, c.arguments])).toEqual([
      ['get_weather', ARGS_A],
      ['lookup', ARGS_B],
    ]);
    expect(new Set(a.calls.map((c) => c.id)).size).toBe(2);
  });

  it('streams arguments as they come, holding back only what may be the end tag', () => {
    const stream = new ToolCallStream();
    const events = stream.push(`${toolCallText('f', '{"a": 1').slice(0, -'}\n</tool_call>'.length)}`);
    expect(events.map((e) => e.type)).toEqual(['call', 'arguments']);
    expect(events[1]).toMatchObject({ delta: '{"a": 1' });
  });

  it('text that only looks like a tag start is content; a cut call ends with what it had', () => {
    expect(assemble(['a <tool', '_ca', 'b> c']).content).toBe('a <tool_cab> c');
    const cut = assemble([`${toolCallText('f', '{"a": 1}').slice(0, -14)}`]);
    expect(cut.calls).toEqual([{ id: cut.calls[0].id, name: 'f', arguments: '{"a": 1}' }]);
  });
});
