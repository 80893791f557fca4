/**
 * The truncation a session's next turn will need, made between turns instead of on the next turn's critical path.
 *
 * Past the Thinker's limit, session.truncation drops the oldest items in one large step (planTruncation.ts). The
 * items it keeps then sit at new positions, so no cache holds them: the turn that truncated re-prefilled them all, in
 * the Thinker and again in the Talker (~2,000 positions: 2.8-3.9 s against ~0.6 s for the turns around it, issue 41).
 * Instead, once an answer's first audio is out, this predicts the next turn (a user item and an answer the size of
 * the last ones): if it would cross the limit, the items that truncation would drop are chosen now, and a warm-up
 * request computes the prompt the next turn will start with (the kept items, through this turn's user item) in
 * every stage's prefix cache while the answer plays. When the answer's response.done is out, those items leave the
 * conversation (conversation.item.deleted, as a truncation sends), so the next turn fits without dropping anything
 * and starts from the cache. A warm-up only saves time: the next turn stops it (what it computed stays cached), and a
 * turn larger than predicted truncates on its own as before.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Engine, RequestHandle } from '../../common/engine.ts';
import type { PrefillSlots } from '../../voice/index.ts';
import { resolveMaxTokens } from '../generationParams.ts';
import type { StoredItem } from './Conversation.ts';
import { planTruncation, type PositionedItem } from './planTruncation.ts';
import { planResponse, type PlanContext } from './responsePlan.ts';

/** Items that only stand for the next turn in a plan (never real ids: those are [A-Za-z0-9_-]). */
const NEXT_ANSWER = '\0answer';
const NEXT_USER = '\0user';

export class TruncationAhead {
  #warmUp: RequestHandle | null = null;
  #drop: readonly string[] = [];
  #count = 0;

  constructor(
    private readonly engine: Engine,
    private readonly slots: PrefillSlots,
    private readonly log: FastifyBaseLogger,
    private readonly sessionId: string,
  ) {}

  /** An answer's first audio is out: plans the next turn's truncation, and warms its prompt if there is one. */
  plan(ctx: PlanContext): void {
    if (this.#warmUp || this.#drop.length > 0) return;
    const drop = predictedDrop(ctx);
    if (drop.length === 0) return;
    this.#drop = drop;
    if (!this.slots.tryTake()) return; // the items still go at response.done; the next turn just computes them
    try {
      const dropped = new Set(drop);
      const kept = ctx.items.filter((it) => !dropped.has(it.id));
      // The answer to come needs no more than one token to have computed its prompt everywhere.
      const request = planResponse({ max_output_tokens: 1 }, { ...ctx, items: kept }).request(
        `${this.sessionId}-ahead-${this.#count++}`,
      );
      const handle = this.engine.generate(request);
      this.#warmUp = handle;
      handle.events.subscribe({
        next: (e) => {
          // The first audio means the Talker has its prompt rows too: nothing more is worth computing.
          if (e.type === 'audio' && this.#warmUp === handle) this.stop();
          if (e.type !== 'done') return;
          this.slots.give();
          if (this.#warmUp === handle) this.#warmUp = null;
        },
      });
    } catch (err) {
      this.slots.give();
      this.log.debug({ err, sessionId: this.sessionId }, 'truncation warm-up not started');
    }
  }

  /** The answer's response.done is out: the items the next turn would drop, to forget now (once). */
  takeDrop(): readonly string[] {
    const drop = this.#drop;
    this.#drop = [];
    return drop;
  }

  /** The next turn begins (or the session ends): the warm-up stops; what it computed stays in the caches. */
  stop(): void {
    this.#warmUp?.cancel('the next turn began');
    this.#warmUp = null;
  }
}

/**
 * The items a truncation would drop at the next turn if it were a user item as large as this turn's and its answer
 * as large as the last one; none when the next turn fits, or when the plan would reach this turn's own items.
 */
function predictedDrop(ctx: PlanContext): string[] {
  const { positions, state, items } = ctx;
  if (!positions || state.truncation === 'disabled') return [];
  const positioned: PositionedItem[] = items.map((it) => ({ id: it.id, positions: positions.item(it) }));
  const lastUser = lastIndex(items, (it) => it.role === 'user');
  const lastAnswer = lastIndex(items, (it, i) => it.role === 'assistant' && positioned[i].positions > 0);
  if (lastUser < 0) return [];
  const next = [
    { id: NEXT_ANSWER, positions: lastAnswer < 0 ? 0 : positioned[lastAnswer].positions },
    { id: NEXT_USER, positions: positioned[lastUser].positions },
  ];
  const maxTokens = resolveMaxTokens(state.maxOutputTokens, ctx.tokenLimits, 'session.max_output_tokens');
  const plan = planTruncation({
    items: [...positioned, ...next],
    instructionsPositions: positions.instructions(state.instructions),
    maxPositions: positions.maxPositions,
    autoPositions: positions.autoPositions,
    answerPositions: maxTokens ?? ctx.tokenLimits.stageDefault,
    setting: state.truncation,
  });
  if (!plan.fits || plan.drop.length === 0) return [];
  const ownTurn = new Set(items.slice(lastUser).map((it) => it.id));
  return plan.drop.some((id) => ownTurn.has(id) || id === NEXT_ANSWER) ? [] : [...plan.drop];
}

function lastIndex(items: readonly StoredItem[], test: (it: StoredItem, i: number) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (test(items[i], i)) return i;
  return -1;
}
