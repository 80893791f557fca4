/**
 * How a tool call reads in a model's text: Hermes' format, which Qwen2.5/Qwen3 (and so Qwen3-Omni) were trained on and
 * the generated models' chat template uses:
 *
 *     <tool_call>
 *     {"name": "get_weather", "arguments": {"city": "Paris"}}
 *     </tool_call>
 *
 * One format for the prompt (assistant turns with tool_calls, rendered by ChatML templates), the grammar that forces
 * or allows calls (src/server/chat/chatTools.ts) and the parser that reads them back (toolCallStream.ts).
 */
export const TOOL_CALL_TRIGGER = '<tool_call>';
export const TOOL_CALL_END = '}\n</tool_call>';

/** What precedes a call's arguments JSON (the name is JSON-quoted, as json.dumps writes it). */
export function toolCallBegin(name: string): string {
  return `${TOOL_CALL_TRIGGER}\n{"name": ${JSON.stringify(name)}, "arguments": `;
}

/** A whole call, as an assistant turn of the history shows it. */
export function toolCallText(name: string, argumentsJson: string): string {
  return `${toolCallBegin(name)}${argumentsJson}${TOOL_CALL_END}`;
}

export type { ToolCall, ToolDefinition } from '../common/engine.ts';
