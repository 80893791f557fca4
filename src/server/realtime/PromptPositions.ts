/**
 * What a session's instructions and items take in the Thinker's prompt, counted by the engine itself
 * (Engine.promptPositions: its tokenizer and chat template, media expanded to their embeddings), so a truncation plan
 * works on the positions the Thinker will be sent, not on an estimate of them.
 *
 * Each item is counted once, as the positions it adds to a prompt (the prompt of [item] less the prompt of no item),
 * and the count is kept on the item for the graph that counted it (a reload may bring another tokenizer; setText
 * clears it when the item's text changes). For the chat templates Chorus renders itself (ChatML markers, plain turns)
 * a turn's tokens do not depend on its neighbours, so the sum is the prompt's length exactly; a Hugging Face Jinja
 * template may merge across turns, which makes the sum an estimate, and the answer's reserve absorbs the difference
 * (a prompt that still ends up too long fails its response with the context error, never silently).
 */
import type { ChatMessage, Engine } from '../../common/engine.ts';
import type { StageGraph } from '../../common/graph.ts';
import { DEFAULT_AUTO_TRUNCATION_POSITIONS } from '../../common/realtimeSettings.ts';
import { entryPromptLimits } from '../../../stages/registry.ts';
import { toChatMessages, type StoredItem } from './Conversation.ts';

type CountPositions = (messages: readonly ChatMessage[]) => number;

/** The entry Thinker's positions, when its model says (a generated model); null for a model that does not. */
export function thinkerPositions(graph: StageGraph): number | null {
  return entryPromptLimits(graph).maxPositions ?? null;
}

export class PromptPositions {
  readonly #count: CountPositions;
  readonly #graph: StageGraph;
  readonly maxPositions: number;
  /** What truncation "auto" lets the items fill (YAML realtime.auto_truncation_positions, planTruncation.ts). */
  readonly autoPositions: number;
  #empty: number | null = null;
  #instructions: { readonly text: string; readonly positions: number } | null = null;

  private constructor(count: CountPositions, graph: StageGraph, maxPositions: number) {
    this.#count = count;
    this.#graph = graph;
    this.maxPositions = maxPositions;
    this.autoPositions = graph.autoTruncationPositions ?? DEFAULT_AUTO_TRUNCATION_POSITIONS;
  }

  /** For the engine's graph now; null when the engine cannot count or the Thinker's positions are unknown. */
  static of(engine: Engine, previous: PromptPositions | null): PromptPositions | null {
    if (previous && previous.#graph === engine.graph) return previous;
    const maxPositions = thinkerPositions(engine.graph);
    const count = engine.promptPositions?.bind(engine);
    return count && maxPositions !== null ? new PromptPositions(count, engine.graph, maxPositions) : null;
  }

  /** The prompt without items: the instructions as the system turn, the template's fixed part, the answer header. */
  instructions(text: string): number {
    if (this.#instructions?.text !== text)
      this.#instructions = { text, positions: this.#count(toChatMessages(text, []).messages) };
    return this.#instructions.positions;
  }

  /** Positions the item adds to a prompt (0 for an empty one, which is left out of prompts). */
  item(item: StoredItem): number {
    if (item.positions?.graph === this.#graph) return item.positions.count;
    const messages = toChatMessages('', [item]).messages;
    const count = messages.length === 0 ? 0 : Math.max(0, this.#count(messages) - this.#emptyPrompt());
    item.positions = { graph: this.#graph, count };
    return count;
  }

  #emptyPrompt(): number {
    if (this.#empty === null) {
      try {
        this.#empty = this.#count([]);
      } catch {
        // A Jinja template that needs a message: items then count their share of the fixed part too (an
        // over-estimate, so truncation comes a little early rather than too late).
        this.#empty = 0;
      }
    }
    return this.#empty;
  }
}
