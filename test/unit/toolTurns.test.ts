/** Tools and tool turns in the generated models' ChatML prompt (toolTurns.ts), through the byte tokenizer. */
import { describe, expect, it } from 'vitest';
import { ByteTokenizer } from '../../src/tokenizer/index.ts';

const tokenizer = new ByteTokenizer(2048);
const tools = [{ name: 'get_weather', description: 'the weather', parameters: { type: 'object' } }];

describe('toolTurns in ChatML', () => {
  it('puts the tools in a system block, the call after the text, the result in tool_response tags', () => {
    const prompt = tokenizer.decode(
      tokenizer.applyChatTemplate(
        [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Weather?' },
          {
            role: 'assistant',
            content: '',
            toolCalls: [{ id: 'c1', name: 'get_weather', arguments: '{"city": "Oslo"}' }],
          },
          { role: 'tool', content: '{"temp": 3}', toolCallId: 'c1' },
        ],
        tools,
      ),
    );
    expect(prompt).toContain('<|im_start|>system\nBe brief.\n\n# Tools');
    expect(prompt).toContain('"name":"get_weather"');
    const call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>';
    expect(prompt).toContain(`<|im_start|>assistant\n${call}<|im_end|>`);
    expect(prompt).toContain('<|im_start|>user\n<tool_response>\n{"temp": 3}\n</tool_response><|im_end|>');
    expect(prompt.endsWith('<|im_start|>assistant\n')).toBe(true);
  });

  it('without tools the prompt is what it was', () => {
    const turns = [{ role: 'user', content: 'Hi' }];
    expect(tokenizer.applyChatTemplate(turns, [])).toEqual(tokenizer.applyChatTemplate(turns));
    expect(tokenizer.decode(tokenizer.applyChatTemplate(turns))).not.toContain('# Tools');
  });
});
