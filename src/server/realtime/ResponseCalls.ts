/**
 * The function calls of one Realtime response: reads them out of the answer's text as it streams (the chat path's
 * ToolCallStream: Hermes-format calls, the format the grammar holds them to) and turns each into a `function_call`
 * output item: response.output_item.added, its arguments as response.function_call_arguments.delta while they are
 * generated, .done with the whole JSON, response.output_item.done; and, in the conversation, the item added when the
 * call starts and done when its arguments are.
 *
 * A call cut short (the response cancelled, a barge-in, max_output_tokens) is incomplete: response.done lists it so,
 * and it leaves the conversation (conversation.item.deleted), since its arguments are not whole JSON and a later
 * prompt must not show the model a call that was never made.
 */
import { ToolCallStream, type ToolCallEvent } from '../chat/toolCallStream.ts';
import type { CallData, StoredItem } from './Conversation.ts';
import type { FunctionCallItemResource } from './ItemResource.ts';
import { newId } from './serverEvents.ts';
import type { SocketWriter } from './SocketWriter.ts';

type FunctionCall = Extract<CallData, { type: 'function_call' }>;

interface Call {
  readonly itemId: string;
  readonly outputIndex: number;
  readonly data: FunctionCall;
  readonly previousItemId: string | null;
}

export interface ResponseCallsContext {
  readonly writer: SocketWriter;
  readonly responseId: string;
  /** The output index of the first call (after the response's message, when it has one). */
  readonly firstOutputIndex: number;
  /** Adds a call item to the conversation (null when the response is out of band); returns its predecessor. */
  readonly addItem: ((item: StoredItem) => string | null) | null;
  readonly removeItem: (itemId: string) => void;
}

export class ResponseCalls {
  readonly #ctx: ResponseCallsContext;
  readonly #parser = new ToolCallStream();
  readonly #calls: Call[] = [];
  #open: Call | null = null;

  constructor(ctx: ResponseCallsContext) {
    this.#ctx = ctx;
  }

  /** A call has begun: the message before it is over. */
  get started(): boolean {
    return this.#calls.length > 0;
  }

  /** Calls whose arguments are whole. */
  get completed(): number {
    return this.#calls.filter((c) => c.data.status === 'completed').length;
  }

  /** Reads a text delta; returns the text outside calls (the message's), and sends the calls' events. */
  push(delta: string): string {
    return this.#apply(this.#parser.push(delta));
  }

  /**
   * The answer ended. `whole`: it ended where it meant to (held-back text is the message's); a call still open
   * (its end tag never came: cancelled, cut by max_output_tokens) is incomplete. Returns held-back text.
   */
  end(whole: boolean): string {
    const text = whole ? this.#apply(this.#parser.finish()) : '';
    const open = this.#open;
    if (open) {
      open.data.status = 'incomplete';
      this.#close(open);
    }
    return text;
  }

  resources(): FunctionCallItemResource[] {
    return this.#calls.map((c) => resourceOf(c));
  }

  #apply(events: readonly ToolCallEvent[]): string {
    let text = '';
    for (const e of events) {
      if (e.type === 'content') text += e.text;
      else if (e.type === 'call') this.#begin(e.id, e.name);
      else this.#arguments(e.delta);
    }
    // A call's arguments are whole once the parser is past its end tag (back in text, or at the next call's start).
    const open = this.#open;
    if (open && this.#parser.numCalls === this.#calls.length && this.#parser.inText) {
      open.data.status = 'completed';
      this.#close(open);
    }
    return text;
  }

  #begin(callId: string, name: string): void {
    if (this.#open) {
      this.#open.data.status = 'completed';
      this.#close(this.#open);
    }
    const itemId = newId('item');
    const data: FunctionCall = { type: 'function_call', callId, name, arguments: '', status: 'in_progress' };
    const { writer, responseId, addItem } = this.#ctx;
    const previousItemId = addItem ? addItem({ id: itemId, role: 'assistant', parts: [], call: data }) : null;
    const call: Call = { itemId, outputIndex: this.#ctx.firstOutputIndex + this.#calls.length, data, previousItemId };
    this.#calls.push(call);
    this.#open = call;
    const item = resourceOf(call);
    const output = { response_id: responseId, output_index: call.outputIndex };
    writer.send({ type: 'response.output_item.added', event_id: newId('event'), ...output, item });
    if (addItem)
      writer.send({
        type: 'conversation.item.added',
        event_id: newId('event'),
        previous_item_id: previousItemId,
        item,
      });
  }

  #arguments(delta: string): void {
    const call = this.#open;
    if (!call || delta.length === 0) return;
    call.data.arguments += delta;
    this.#ctx.writer.send({
      type: 'response.function_call_arguments.delta',
      event_id: newId('event'),
      response_id: this.#ctx.responseId,
      item_id: call.itemId,
      output_index: call.outputIndex,
      call_id: call.data.callId,
      delta,
    });
  }

  #close(call: Call): void {
    this.#open = null;
    const { writer, responseId } = this.#ctx;
    const output = { response_id: responseId, output_index: call.outputIndex };
    if (call.data.status === 'completed') {
      writer.send({
        type: 'response.function_call_arguments.done',
        event_id: newId('event'),
        ...output,
        item_id: call.itemId,
        call_id: call.data.callId,
        name: call.data.name,
        arguments: call.data.arguments,
      });
    }
    const item = resourceOf(call);
    writer.send({ type: 'response.output_item.done', event_id: newId('event'), ...output, item });
    if (!this.#ctx.addItem) return;
    if (call.data.status === 'completed') {
      writer.send({
        type: 'conversation.item.done',
        event_id: newId('event'),
        previous_item_id: call.previousItemId,
        item,
      });
    } else {
      this.#ctx.removeItem(call.itemId);
      writer.send({ type: 'conversation.item.deleted', event_id: newId('event'), item_id: call.itemId });
    }
  }
}

function resourceOf(c: Call): FunctionCallItemResource {
  return {
    id: c.itemId,
    object: 'realtime.item',
    type: 'function_call',
    status: c.data.status,
    call_id: c.data.callId,
    name: c.data.name,
    arguments: c.data.arguments,
  };
}
