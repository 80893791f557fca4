/**
 * Reads Hermes-format tool calls (src/tokenizer/toolCalls.ts) out of an answer's text as it streams: text outside
 * calls comes out as content, each call as its start (id, name) and then fragments of its arguments JSON as they are
 * generated, which is what OpenAI's `delta.tool_calls` carries and its SDKs assemble (concatenating each index's
 * `function.arguments`). Text that might be the start of a tag is held back until it is known not to be one.
 *
 * Under a tool grammar the calls are exactly in this format (chatTools.ts); an answer cut short (max_tokens) ends
 * whatever it had: a call's partial arguments, or held-back text as content.
 */
import { randomBytes } from 'node:crypto';
import { TOOL_CALL_END, TOOL_CALL_TRIGGER } from '../../tokenizer/toolCalls.ts';

export type ToolCallEvent =
  | { readonly type: 'content'; readonly text: string }
  | { readonly type: 'call'; readonly index: number; readonly id: string; readonly name: string }
  | { readonly type: 'arguments'; readonly index: number; readonly delta: string };

/** `{"name": "<json string>", "arguments": ` after the trigger and its newline. */
const CALL_HEAD = /^\n\{"name": ("(?:[^"\\]|\\.)*"), "arguments": /;
const HEAD_MAX = 256;

/** How much of the end of `text` could be the start of `tag` (to hold back). */
function partialTagAt(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) if (tag.startsWith(text.slice(-n))) return n;
  return 0;
}

export class ToolCallStream {
  private state: 'text' | 'head' | 'arguments' = 'text';
  private buffer = '';
  /** Whitespace between calls (or before the first): content only if text follows. */
  private pendingSpace = '';
  private calls = 0;

  get numCalls(): number {
    return this.calls;
  }

  /** Outside any call (a call's arguments are whole once it is back here). */
  get inText(): boolean {
    return this.state === 'text';
  }

  push(delta: string): ToolCallEvent[] {
    this.buffer += delta;
    const out: ToolCallEvent[] = [];
    for (;;) {
      const before = this.buffer.length + this.state;
      if (this.state === 'text') this.text(out);
      else if (this.state === 'head') this.head(out);
      else this.arguments(out);
      if (this.buffer.length + this.state === before) return out;
    }
  }

  /** The answer ended: what is held back comes out as it stands. */
  finish(): ToolCallEvent[] {
    const out: ToolCallEvent[] = [];
    if (this.state === 'arguments' && this.buffer.length > 0)
      out.push({ type: 'arguments', index: this.calls - 1, delta: this.buffer });
    else if (this.state !== 'arguments')
      this.content(out, this.pendingSpace + (this.state === 'head' ? TOOL_CALL_TRIGGER : '') + this.buffer, true);
    this.buffer = '';
    this.pendingSpace = '';
    return out;
  }

  private content(out: ToolCallEvent[], text: string, final = false): void {
    if (text.length === 0) return;
    if (/^\s*$/.test(text) && (!final || this.calls > 0)) {
      if (!final) this.pendingSpace += text;
      return;
    }
    out.push({ type: 'content', text });
  }

  private text(out: ToolCallEvent[]): void {
    const at = this.buffer.indexOf(TOOL_CALL_TRIGGER);
    if (at >= 0) {
      // Whitespace just before a call goes with the call (the same however the deltas cut the text).
      const before = (this.pendingSpace + this.buffer.slice(0, at)).trimEnd();
      if (before.length > 0) this.content(out, before);
      this.pendingSpace = '';
      this.buffer = this.buffer.slice(at + TOOL_CALL_TRIGGER.length);
      this.state = 'head';
      return;
    }
    const hold = partialTagAt(this.buffer, TOOL_CALL_TRIGGER);
    const ready = this.buffer.slice(0, this.buffer.length - hold);
    this.buffer = this.buffer.slice(ready.length);
    if (ready.length === 0) return;
    // Trailing whitespace waits: it goes out with the next text, or is dropped before a call.
    const text = ready.trimEnd();
    if (text.length > 0) {
      this.content(out, this.pendingSpace + text);
      this.pendingSpace = ready.slice(text.length);
    } else this.pendingSpace += ready;
  }

  private head(out: ToolCallEvent[]): void {
    const m = CALL_HEAD.exec(this.buffer);
    if (!m) {
      // Not (yet) a call head: a long buffer that still is not one was text after all.
      if (this.buffer.length > HEAD_MAX) {
        this.content(out, TOOL_CALL_TRIGGER + this.buffer);
        this.buffer = '';
        this.state = 'text';
      }
      return;
    }
    out.push({
      type: 'call',
      index: this.calls,
      id: `call_${randomBytes(12).toString('base64url')}`,
      name: JSON.parse(m[1]) as string,
    });
    this.calls++;
    this.buffer = this.buffer.slice(m[0].length);
    this.state = 'arguments';
  }

  private arguments(out: ToolCallEvent[]): void {
    const at = this.buffer.indexOf(TOOL_CALL_END);
    const end = at >= 0 ? at : this.buffer.length - partialTagAt(this.buffer, TOOL_CALL_END);
    // The end tag's brace closes the call object ({"name": ..., "arguments": ...}): the arguments end before it.
    if (end > 0) out.push({ type: 'arguments', index: this.calls - 1, delta: this.buffer.slice(0, end) });
    this.buffer = this.buffer.slice(at >= 0 ? at + TOOL_CALL_END.length : end);
    if (at >= 0) this.state = 'text';
  }
}

/** The events of a whole answer put together: its content and its calls (a non-streamed completion). */
export class ToolCallAssembly {
  content = '';
  readonly calls: { id: string; name: string; arguments: string }[] = [];

  add(events: readonly ToolCallEvent[]): void {
    for (const e of events) {
      if (e.type === 'content') this.content += e.text;
      else if (e.type === 'call') this.calls.push({ id: e.id, name: e.name, arguments: '' });
      else this.calls[e.index].arguments += e.delta;
    }
  }
}

/** A tool_calls delta of a chat.completion.chunk for one event (content goes as `content`). */
export function toolCallDelta(e: ToolCallEvent): Record<string, unknown> {
  if (e.type === 'content') return { content: e.text };
  if (e.type === 'call')
    return { tool_calls: [{ index: e.index, id: e.id, type: 'function', function: { name: e.name, arguments: '' } }] };
  return { tool_calls: [{ index: e.index, function: { arguments: e.delta } }] };
}
