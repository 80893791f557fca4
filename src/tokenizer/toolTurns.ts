/**
 * Tools and tool turns for templates that have no tool format of their own (the generated models' ChatML, and a
 * tokenizer.json without a chat_template): the tools are described in a system block, an assistant turn's calls
 * follow its text in Hermes' format (toolCalls.ts, the format the grammar holds calls to), and a tool's result is a
 * user turn wrapped in <tool_response> tags, as Qwen's templates do. The result is plain turns any template renders.
 */
import type { ToolDefinition } from '../common/engine.ts';
import type { ChatPiece, ChatTurn } from './Tokenizer.ts';
import { toolCallText } from './toolCalls.ts';

function toolsBlock(tools: readonly ToolDefinition[]): string {
  const signatures = tools.map((t) =>
    JSON.stringify({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.parameters },
    }),
  );
  return (
    '# Tools\n\nThese functions are available; the signature of each is inside <tools></tools>:\n<tools>\n' +
    `${signatures.join('\n')}\n</tools>\n\n` +
    'To call one, write its name and arguments as a JSON object inside <tool_call></tool_call> tags:\n' +
    '<tool_call>\n{"name": <function name>, "arguments": <arguments object>}\n</tool_call>'
  );
}

function withText(content: ChatTurn['content'], suffix: string): ChatTurn['content'] {
  if (typeof content === 'string') return content + suffix;
  return [...content, suffix] as readonly ChatPiece[];
}

/** The turns with tools and tool calls written into their text. */
export function toolTurns(messages: readonly ChatTurn[], tools: readonly ToolDefinition[] | undefined): ChatTurn[] {
  const turns: ChatTurn[] = messages.map((m) => {
    if (m.role === 'tool') return { role: 'user', content: wrapResponse(m.content) };
    if (m.toolCalls && m.toolCalls.length > 0) {
      const calls = m.toolCalls.map((c) => toolCallText(c.name, c.arguments)).join('\n');
      const hasText = typeof m.content === 'string' ? m.content.length > 0 : m.content.length > 0;
      return { role: m.role, content: withText(m.content, `${hasText ? '\n' : ''}${calls}`) };
    }
    return { role: m.role, content: m.content };
  });
  if (!tools || tools.length === 0) return turns;
  const block = toolsBlock(tools);
  const first = turns[0];
  if (first?.role === 'system')
    return [{ role: 'system', content: withText(first.content, `\n\n${block}`) }, ...turns.slice(1)];
  return [{ role: 'system', content: block }, ...turns];
}

function wrapResponse(content: ChatTurn['content']): ChatTurn['content'] {
  if (typeof content === 'string') return `<tool_response>\n${content}\n</tool_response>`;
  return ['<tool_response>\n', ...content, '\n</tool_response>'] as readonly ChatPiece[];
}
