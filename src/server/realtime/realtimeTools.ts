/**
 * Realtime's function tools (GA shapes): `tools` and `tool_choice` on session.update and response.create, and the
 * function_call / function_call_output items of the conversation. The grammar that forces or allows calls is the chat
 * path's (planToolCalls in src/server/chat/chatTools.ts: Hermes-format calls under an xgrammar structural tag), so a
 * call reads, is constrained and is parsed back (toolCallStream.ts) the same way on both APIs.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { GrammarSpec, ToolDefinition } from '../../common/engine.ts';
import { planToolCalls, toolDefinition, type ToolChoice } from '../chat/chatTools.ts';
import { ErrorCodes } from '../../common/errors.ts';
import { ClientInputError } from '../validate.ts';

const FunctionName = Type.String({ pattern: '^[a-zA-Z0-9_-]{1,64}$' });

/** A function tool, flat as Realtime has it ({type, name, description, parameters}). */
export const RealtimeTool = Type.Object(
  {
    type: Type.Literal('function'),
    name: FunctionName,
    description: Type.Optional(Type.String()),
    parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false },
);
export type RealtimeTool = Static<typeof RealtimeTool>;

export const RealtimeToolChoice = Type.Union([
  Type.Literal('none'),
  Type.Literal('auto'),
  Type.Literal('required'),
  Type.Object({ type: Type.Literal('function'), name: FunctionName }, { additionalProperties: false }),
]);
export type RealtimeToolChoice = Static<typeof RealtimeToolChoice>;

/** The tool fields of session.update and response.create. */
export const toolFields = {
  tools: Type.Optional(Type.Union([Type.Null(), Type.Array(RealtimeTool, { maxItems: 128 })])),
  tool_choice: Type.Optional(Type.Union([Type.Null(), RealtimeToolChoice])),
  parallel_tool_calls: Type.Optional(Type.Union([Type.Null(), Type.Boolean()])),
};

const CallId = Type.String({ minLength: 1, maxLength: 256 });
const ItemId = Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' }));

/** A call the model made (the client may replay one into a new conversation). */
export const FunctionCallItem = Type.Object(
  {
    type: Type.Literal('function_call'),
    id: ItemId,
    call_id: CallId,
    name: FunctionName,
    arguments: Type.String(),
    status: Type.Optional(Type.Union([Type.Literal('completed'), Type.Literal('incomplete')])),
  },
  { additionalProperties: false },
);

/** The result of a call, for the next response to read. */
export const FunctionCallOutputItem = Type.Object(
  { type: Type.Literal('function_call_output'), id: ItemId, call_id: CallId, output: Type.String() },
  { additionalProperties: false },
);

/** The session's tools as the prompt and the grammar see them. */
export interface SessionTools {
  readonly tools: readonly ToolDefinition[];
  readonly toolChoice: RealtimeToolChoice;
  /** Always false: a Realtime response ends at its first call (mergeTools refuses true). */
  readonly parallelToolCalls: false;
}

/** A Realtime response ends at its first call (as OpenAI's do): the next call is the next response's. */
export const NO_TOOLS: SessionTools = { tools: [], toolChoice: 'auto', parallelToolCalls: false };

interface ToolFieldValues {
  readonly tools?: RealtimeTool[] | null;
  readonly tool_choice?: RealtimeToolChoice | null;
  readonly parallel_tool_calls?: boolean | null;
}

/** The fields over what was in effect (`at`: session or response, for the errors' param). */
export function mergeTools(fields: ToolFieldValues, current: SessionTools, at: string): SessionTools {
  const tools =
    fields.tools === undefined
      ? current.tools
      : (fields.tools ?? []).map((t, i) => toolDefinition(t, `${at}.tools[${i}]`));
  if (fields.parallel_tool_calls === true)
    throw new ClientInputError(
      `${at}.parallel_tool_calls: a Realtime response ends at its first function call, so calls cannot be made in ` +
        'parallel: leave it out (or false), and answer each call before the next response.create',
      `${at}.parallel_tool_calls`,
      ErrorCodes.PARAM_UNSUPPORTED,
    );
  const merged: SessionTools = {
    tools,
    toolChoice: fields.tool_choice ?? current.toolChoice,
    parallelToolCalls: false,
  };
  planCalls(merged, at); // a tool_choice naming no tool is refused now, not at the next response
  return merged;
}

export interface CallPlan {
  readonly tools: readonly ToolDefinition[];
  readonly grammar: GrammarSpec | undefined;
  /** The answer is calls only: no message, no audio (a call is never spoken). */
  readonly forced: boolean;
}

/** What a response under these tools asks the engine for (no grammar: no tools, or tool_choice none). */
export function planCalls(t: SessionTools, at: string): CallPlan {
  const choice: ToolChoice = typeof t.toolChoice === 'object' ? { name: t.toolChoice.name } : t.toolChoice;
  // tool_choice "auto" (OpenAI's default) with no tools asks for nothing; "required" or a name with none is refused.
  if (t.tools.length === 0 && choice === 'auto') return { tools: [], grammar: undefined, forced: false };
  const plan = planToolCalls(t.tools, choice, t.parallelToolCalls, {
    toolChoice: `${at}.tool_choice`,
    namedFunction: `${at}.tool_choice.name`,
  });
  return { tools: choice === 'none' ? [] : t.tools, grammar: plan.grammar, forced: plan.forced };
}

/** The echo of the tools in session.updated / session.created. */
export function toolsResource(t: SessionTools): { tools: RealtimeTool[]; tool_choice: RealtimeToolChoice } {
  return {
    tools: t.tools.map((d) => ({
      type: 'function',
      name: d.name,
      ...(d.description !== undefined ? { description: d.description } : {}),
      parameters: { ...d.parameters },
    })),
    tool_choice: t.toolChoice,
  };
}

/** A function_call_output must answer a call the conversation holds (OpenAI refuses one that does not). */
export function checkCallAnswered(callIds: Iterable<string>, callId: string): void {
  for (const id of callIds) if (id === callId) return;
  throw new ClientInputError(
    `item.call_id ${callId} is not the call_id of a function_call in this conversation: send the call_id of the ` +
      'response.function_call_arguments.done (or of the function_call item) it answers',
    'item.call_id',
  );
}
