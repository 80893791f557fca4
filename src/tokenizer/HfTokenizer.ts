/**
 * A Hugging Face tokenizer (tokenizer.json + tokenizer_config.json) through @huggingface/tokenizers, which
 * takes the parsed JSON. The prompt comes from the config's Jinja chat_template, rendered with @huggingface/jinja
 * as transformers' apply_chat_template does; a conversation carrying media placeholders (token pieces that must
 * go in verbatim) and a tokenizer without a template use ChatML when the vocabulary has <|im_start|>/<|im_end|>
 * (Qwen and the omni models), a plain "role: content" layout otherwise.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Template } from '@huggingface/jinja';
import { Tokenizer as HfCore } from '@huggingface/tokenizers';
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import { logger } from '../common/log.ts';
import {
  appendIds,
  chatMlIds,
  encodeTurn,
  TurnEncodings,
  type ChatTurn,
  type DecodeOptions,
  type Tokenizer,
} from './Tokenizer.ts';
import type { ToolDefinition } from '../common/engine.ts';
import { toolTurns } from './toolTurns.ts';
import { pieceBytes, vocabTypeOf, type VocabType } from './pieceBytes.ts';

/**
 * A turn as transformers' apply_chat_template passes it to a Jinja template: tool calls as {id, type, function: {name,
 * arguments}} with the arguments parsed (templates write them with tojson, as vLLM passes them too).
 */
function hfMessage(m: ChatTurn): Record<string, unknown> {
  const out: Record<string, unknown> = { role: m.role, content: m.content };
  if (m.toolCalls && m.toolCalls.length > 0) {
    out.tool_calls = m.toolCalls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: parseArguments(c.arguments) },
    }));
  }
  if (m.toolCallId !== undefined) out.tool_call_id = m.toolCallId;
  return out;
}

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text; // not JSON: the template gets the text as the client sent it
  }
}

/** A tool as Hugging Face templates take it (the OpenAI `tools` entry). */
function hfTool(t: ToolDefinition): Record<string, unknown> {
  return { type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } };
}

/** tokenizer_config.json fields we read; special tokens are strings or {content: ...} objects. */
export interface TokenizerConfig {
  bos_token?: SpecialTokenField;
  eos_token?: SpecialTokenField;
  pad_token?: SpecialTokenField;
  chat_template?: unknown;
  clean_up_tokenization_spaces?: boolean;
  [key: string]: unknown;
}
type SpecialTokenField = string | { content: string } | null;

/** Tried in order when tokenizer_config.json names no eos_token. */
const EOS_CANDIDATES = ['<|endoftext|>', '<|im_end|>', '<|end_of_text|>', '</s>', '<eos>'];

export class HfTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly bosTokenId: number | null;
  readonly eosTokenId: number;
  readonly padTokenId: number;
  readonly stopTokenIds: readonly number[];
  readonly #core: HfCore;
  readonly #specialIds: ReadonlySet<number>;
  readonly #chatMarkers: { start: number; end: number } | null;
  /** The chat template's turn texts, encoded once for the prompts that repeat them (TurnEncodings). */
  readonly #turns = new TurnEncodings((text) => this.encode(text));
  readonly #template: Template | null;
  readonly #templateContext: Record<string, unknown>;
  /** The id unknown text maps to (tokenizer.json model.unk_token), or null: then unknown text is refused. */
  readonly #unkId: number | null;
  readonly #source: string;
  /**
   * Off unless the config turns it on: the cleanup rewrites " ." to "." across token boundaries, which
   * makes incremental decoding disagree with a full decode (recent HF configs set it false too).
   */
  readonly #cleanUpSpaces: boolean;
  /** How the vocabulary writes its tokens' bytes (pieceBytes.ts). */
  readonly #vocabType: VocabType;

  /** Reads tokenizer.json (required) and tokenizer_config.json (optional) from a folder. */
  static fromDir(dir: string): HfTokenizer {
    const read = (name: string, required: boolean): object | undefined => {
      const file = path.join(dir, name);
      if (!existsSync(file)) {
        if (required)
          throw new ChorusError(ErrorCodes.TOKENIZER, `${file} not found: a tokenizer folder needs tokenizer.json`);
        return undefined;
      }
      try {
        return JSON.parse(readFileSync(file, 'utf8')) as object;
      } catch (cause) {
        throw new ChorusError(ErrorCodes.TOKENIZER, `${file} is not valid JSON: ${(cause as Error).message}`, {
          cause,
        });
      }
    };
    return new HfTokenizer(
      read('tokenizer.json', true)!,
      (read('tokenizer_config.json', false) ?? {}) as TokenizerConfig,
      dir,
    );
  }

  constructor(tokenizerJson: object, config: TokenizerConfig = {}, source = '<memory>') {
    try {
      this.#core = new HfCore(tokenizerJson, config);
    } catch (cause) {
      throw new ChorusError(ErrorCodes.TOKENIZER, `cannot load tokenizer from ${source}: ${(cause as Error).message}`, {
        cause,
      });
    }
    let maxId = -1;
    for (const id of this.#core.get_vocab(true).values()) maxId = Math.max(maxId, id); // no spread: 150k ids
    this.vocabSize = maxId + 1;
    const idOf = (field: SpecialTokenField | undefined): number | null => {
      const content = typeof field === 'string' ? field : field?.content;
      return content === undefined ? null : (this.#core.token_to_id(content) ?? null);
    };
    const eos =
      idOf(config.eos_token) ?? EOS_CANDIDATES.map((t) => this.#core.token_to_id(t)).find((id) => id !== undefined);
    if (eos === undefined || eos === null) {
      throw new ChorusError(
        ErrorCodes.TOKENIZER,
        `no end-of-text token in ${source}: set eos_token in tokenizer_config.json`,
      );
    }
    this.eosTokenId = eos;
    this.bosTokenId = idOf(config.bos_token);
    this.padTokenId = idOf(config.pad_token) ?? eos;
    const start = this.#core.token_to_id('<|im_start|>');
    const end = this.#core.token_to_id('<|im_end|>');
    this.#chatMarkers = start !== undefined && end !== undefined ? { start, end } : null;
    this.stopTokenIds = [...new Set([eos, ...(this.#chatMarkers ? [this.#chatMarkers.end] : [])])];
    this.#specialIds = new Set(
      [...this.#core.get_added_tokens_decoder().values()].filter((t) => t.special).map((t) => t.id),
    );
    this.#cleanUpSpaces = config.clean_up_tokenization_spaces ?? false;
    this.#vocabType = vocabTypeOf(tokenizerJson as Parameters<typeof vocabTypeOf>[0]);
    this.#source = source;
    const unk = (tokenizerJson as { model?: { unk_token?: unknown } }).model?.unk_token;
    this.#unkId = typeof unk === 'string' ? (this.#core.token_to_id(unk) ?? null) : null;
    const text = (field: SpecialTokenField | undefined) => (typeof field === 'string' ? field : (field?.content ?? ''));
    this.#templateContext = { bos_token: text(config.bos_token), eos_token: text(config.eos_token) };
    try {
      this.#template = typeof config.chat_template === 'string' ? new Template(config.chat_template) : null;
    } catch (cause) {
      throw new ChorusError(
        ErrorCodes.TOKENIZER,
        `the chat_template of ${source} is not valid Jinja: ${(cause as Error).message}`,
        { cause },
      );
    }
    if (config.chat_template !== undefined && this.#template === null)
      logger.warn({ source }, 'chat_template is not a string (a list of named templates?): using the built-in layout');
  }

  encode(text: string): number[] {
    if (text.length === 0) return [];
    const ids: (number | undefined)[] = this.#core.encode(text, { add_special_tokens: false }).ids;
    if (ids.every((id) => id !== undefined)) return ids as number[];
    // The library leaves text its model has no token for as a hole (even with an unk_token): fill or refuse.
    if (this.#unkId !== null) return ids.map((id) => id ?? this.#unkId!);
    const unknown = text
      .split(/\s+/)
      .filter((w) => w && this.#core.encode(w).ids.some((id: number | undefined) => id === undefined));
    throw new ChorusError(
      ErrorCodes.REQUEST_INVALID,
      `the tokenizer of this model (${this.#source}) has no token for ${unknown
        .slice(0, 5)
        .map((w) => `"${w}"`)
        .join(', ')} and no unk_token to stand in: rephrase with words it knows, or add an unk_token to its ` +
        'tokenizer.json',
    );
  }

  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    if (ids.length === 0) return ''; // the library throws on an empty list
    return this.#core.decode([...ids], {
      skip_special_tokens: options.skipSpecialTokens ?? false,
      clean_up_tokenization_spaces: this.#cleanUpSpaces,
    });
  }

  /** The id of a special (added) token by its text, or null when the vocabulary has no such special token. */
  specialTokenId(text: string): number | null {
    const id = this.#core.token_to_id(text);
    return id !== undefined && this.#specialIds.has(id) ? id : null;
  }

  isSpecialToken(id: number): boolean {
    return this.#specialIds.has(id);
  }

  /** A (non-special) token's own bytes, read from its vocabulary string; null where the vocabulary is raw text. */
  pieceBytes(id: number): Uint8Array | null {
    const piece = this.#specialIds.has(id) ? undefined : this.#core.id_to_token(id);
    return piece === undefined ? null : pieceBytes(piece, this.#vocabType);
  }

  applyChatTemplate(chat: readonly ChatTurn[], tools?: readonly ToolDefinition[]): number[] {
    const texts = chat.every((m) => typeof m.content === 'string');
    if (this.#template && texts) {
      let prompt: string;
      try {
        prompt = this.#template.render({
          ...this.#templateContext,
          messages: chat.map(hfMessage),
          ...(tools && tools.length > 0 ? { tools: tools.map(hfTool) } : {}),
          add_generation_prompt: true,
        });
      } catch (cause) {
        throw new ChorusError(
          ErrorCodes.TOKENIZER,
          `the chat_template of ${this.#source} failed to render: ${(cause as Error).message}`,
          { cause },
        );
      }
      // Special-token text in the rendered prompt (<|im_start|>, <s>...) encodes as those tokens, as in transformers.
      return this.encode(prompt);
    }
    const messages = toolTurns(chat, tools);
    // As with transformers' apply_chat_template, marker text typed inside content still encodes as the marker token
    // (the library always splits added tokens); ByteTokenizer, by contrast, keeps it text.
    if (this.#chatMarkers) return chatMlIds((t) => this.#turns.of(t), this.#chatMarkers, messages);
    const ids: number[] = [];
    if (this.bosTokenId !== null) ids.push(this.bosTokenId);
    for (const m of messages)
      appendIds(
        ids,
        encodeTurn((t) => this.#turns.of(t), `${m.role}: `, m.content, '\n\n'),
      );
    return appendIds(ids, this.encode('assistant:'));
  }
}
