/**
 * `tools`, `tool_choice`, `parallel_tool_calls` and `response_format` of a chat completion: their schemas, and the
 * grammar they ask for (src/grammar). A JSON answer is constrained to its schema (or to any JSON object); a call is
 * forced (`required`, a named function) or allowed (`auto`) by an xgrammar structural tag in Hermes' tool-call format
 * (src/tokenizer/toolCalls.ts): free text until the model writes `<tool_call>`, then the grammar holds it to
 * `{"name": <a tool>, "arguments": <that tool's parameters schema>}` and the closing tag.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { GrammarSpec } from '../../common/engine.ts';
import { ChorusError, ErrorCodes } from '../../common/errors.ts';
import {
  boundIntegers,
  checkGrammar,
  checkSchemaKeywords,
  jsonSchemaSpec,
  UnsupportedSchemaError,
} from '../../grammar/index.ts';
import { TOOL_CALL_END, TOOL_CALL_TRIGGER, toolCallBegin, type ToolDefinition } from '../../tokenizer/toolCalls.ts';
import { ClientInputError } from '../validate.ts';

const FunctionName = Type.String({ pattern: '^[a-zA-Z0-9_-]{1,64}$' });

export const ToolField = Type.Object({
  type: Type.Literal('function'),
  function: Type.Object({
    name: FunctionName,
    description: Type.Optional(Type.String()),
    parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    strict: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  }),
});

/** An assistant turn's call in the history (OpenAI's message.tool_calls entry). */
export const ToolCallField = Type.Object({
  id: Type.String({ maxLength: 256 }),
  type: Type.Literal('function'),
  function: Type.Object({ name: Type.String({ maxLength: 64 }), arguments: Type.String() }),
});

export const ToolChoiceField = Type.Union([
  Type.Literal('none'),
  Type.Literal('auto'),
  Type.Literal('required'),
  Type.Object({ type: Type.Literal('function'), function: Type.Object({ name: FunctionName }) }),
]);

export const ResponseFormatField = Type.Union([
  Type.Object({ type: Type.Literal('text') }),
  Type.Object({ type: Type.Literal('json_object') }),
  Type.Object({
    type: Type.Literal('json_schema'),
    json_schema: Type.Object({
      name: Type.String({ pattern: '^[a-zA-Z0-9_-]{1,64}$' }),
      description: Type.Optional(Type.String()),
      schema: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      strict: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
    }),
  }),
]);

interface ToolFields {
  readonly tools?: Static<typeof ToolField>[] | null;
  readonly tool_choice?: Static<typeof ToolChoiceField> | null;
  readonly parallel_tool_calls?: boolean | null;
  readonly response_format?: Static<typeof ResponseFormatField> | null;
}

export interface ToolPlan {
  /** The tools the prompt shows the model (none under tool_choice "none"). */
  readonly tools: readonly ToolDefinition[];
  readonly grammar: GrammarSpec | undefined;
  /** Whether the answer's text is read for tool calls. */
  readonly parseCalls: boolean;
}

/** Plans the grammar and the tools of a request; throws a 400 naming the field or the schema keyword. */
export async function planTools(b: ToolFields): Promise<ToolPlan> {
  const choice = b.tool_choice ?? (b.tools && b.tools.length > 0 ? 'auto' : 'none');
  const tools =
    choice === 'none' ? [] : (b.tools ?? []).map((t, i) => toolDefinition(t.function, `tools[${i}].function`));
  const format = b.response_format?.type ?? 'text';
  if (tools.length > 0 && format !== 'text') {
    throw new ClientInputError(
      'response_format and tools cannot both constrain one answer: send one, or tool_choice "none"',
      'response_format',
      ErrorCodes.PARAM_UNSUPPORTED,
    );
  }
  const calls = planToolCalls(
    tools,
    typeof choice === 'object' ? { name: choice.function.name } : choice,
    b.parallel_tool_calls !== false,
    { toolChoice: 'tool_choice', namedFunction: 'tool_choice.function.name' },
  );
  if (calls.grammar) {
    await checked(calls.grammar, 'tools');
    return { tools, grammar: calls.grammar, parseCalls: true };
  }
  if (b.response_format?.type === 'json_object') return { tools, grammar: { type: 'json_object' }, parseCalls: false };
  if (b.response_format?.type === 'json_schema') {
    const at = 'response_format.json_schema.schema';
    // OpenAI's default for a json_schema without a schema: any JSON object.
    let grammar: GrammarSpec;
    try {
      grammar = jsonSchemaSpec(b.response_format.json_schema.schema ?? { type: 'object' }, at);
    } catch (err) {
      throw clientError(err, at);
    }
    await checked(grammar, at);
    return { tools, grammar, parseCalls: false };
  }
  return { tools, grammar: undefined, parseCalls: false };
}

/** tool_choice in either API's shape: a named function is its name. */
export type ToolChoice = 'none' | 'auto' | 'required' | { readonly name: string };

export interface ToolCallPlan {
  /** The grammar of the calls (undefined: no tools to call). */
  readonly grammar: GrammarSpec | undefined;
  /** The answer is calls only (`required`, a named function); `auto` lets the model write text or call. */
  readonly forced: boolean;
}

/**
 * The grammar of an answer that may (`auto`) or must (`required`, a named function) call these tools: the one place
 * chat completions and Realtime plan calls. Synchronous: the keywords were checked by toolDefinition; xgrammar's own
 * check of the result is checkGrammar's (chat awaits it; Realtime leaves it to the Thinker's compile).
 */
export function planToolCalls(
  tools: readonly ToolDefinition[],
  choice: ToolChoice,
  parallel: boolean,
  params: { readonly toolChoice: string; readonly namedFunction: string },
): ToolCallPlan {
  if (choice === 'none') return { grammar: undefined, forced: false };
  if (tools.length === 0)
    throw new ClientInputError(
      `${params.toolChoice} ${JSON.stringify(choice)} needs tools: send tools, or leave ${params.toolChoice} out`,
      params.toolChoice,
    );
  const named = typeof choice === 'object' ? choice.name : null;
  const offered = named === null ? tools : tools.filter((t) => t.name === named);
  if (offered.length === 0)
    throw new ClientInputError(`${params.toolChoice} names "${named}", which is not in tools`, params.namedFunction);
  const grammar = toolGrammar(offered, {
    atLeastOne: choice !== 'auto',
    stopAfterFirst: named !== null || !parallel,
  });
  return { grammar, forced: choice !== 'auto' };
}

/** A function tool as the prompt shows it; its parameters' keywords checked (a 400 naming one that is refused). */
export function toolDefinition(
  t: { readonly name: string; readonly description?: string; readonly parameters?: Record<string, unknown> },
  at: string,
): ToolDefinition {
  const parameters = t.parameters ?? { type: 'object', properties: {} };
  try {
    checkSchemaKeywords(parameters, `${at}.parameters`);
  } catch (err) {
    throw clientError(err, `${at}.parameters`);
  }
  return {
    name: t.name,
    ...(t.description !== undefined ? { description: t.description } : {}),
    parameters,
  };
}

/**
 * Hermes-format calls of these tools. Allowed (`auto`): free text until the model writes the trigger, then a whole
 * call. Forced (`required`, a named function): calls only, one after the other (a newline between), then the end;
 * the first token is the first call's.
 */
export function toolGrammar(
  tools: readonly ToolDefinition[],
  o: { readonly atLeastOne: boolean; readonly stopAfterFirst: boolean },
): GrammarSpec {
  const tags = tools.map((t) => ({
    type: 'tag',
    begin: toolCallBegin(t.name),
    content: { type: 'json_schema', json_schema: boundIntegers(t.parameters) },
    end: TOOL_CALL_END,
  }));
  const format = o.atLeastOne
    ? { type: 'tags_with_separator', tags, separator: '\n', at_least_one: true, stop_after_first: o.stopAfterFirst }
    : {
        type: 'triggered_tags',
        triggers: [TOOL_CALL_TRIGGER],
        tags,
        at_least_one: false,
        stop_after_first: o.stopAfterFirst,
      };
  return { type: 'structural_tag', tag: JSON.stringify({ type: 'structural_tag', format }) };
}

async function checked(grammar: GrammarSpec, param: string): Promise<void> {
  try {
    await checkGrammar(grammar, param);
  } catch (err) {
    throw clientError(err, param);
  }
}

/** A grammar refusal as a client error carrying the field (OpenAI's `param`). */
function clientError(err: unknown, param: string): unknown {
  if (err instanceof UnsupportedSchemaError) return new ClientInputError(err.message, err.at, err.code);
  if (err instanceof ChorusError && err.code === ErrorCodes.GRAMMAR_INVALID)
    return new ClientInputError(err.message, param, err.code);
  return err;
}
