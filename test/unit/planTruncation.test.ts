/** session.truncation planning (pure): which items go so that a prompt and its answer fit the Thinker; the errors. */
import { describe, expect, it } from 'vitest';
import {
  AUTO_RETENTION_RATIO,
  planTruncation,
  truncationError,
  type TruncationInput,
} from '../../src/server/realtime/planTruncation.ts';
import { checkTokenLimits, parseTruncation } from '../../src/server/realtime/parseTruncation.ts';
import { ClientInputError } from '../../src/server/validate.ts';

/** Items i0, i1, ... taking the given positions each. */
const items = (...positions: number[]) => positions.map((p, i) => ({ id: `i${i}`, positions: p }));

/** 1000 positions, 100 for the answer, 50 for the instructions: the items may take 850. */
const input = (over: Partial<TruncationInput>): TruncationInput => ({
  items: [],
  instructionsPositions: 50,
  maxPositions: 1000,
  answerPositions: 100,
  setting: 'auto',
  ...over,
});

/**
 * `turns` turns of a user item and an answer of uneven sizes (40-90 positions each), each turn planned before its
 * answer and the plan applied as a session applies it: at which turns items went, which went, the items in order.
 */
function simulate(setting: TruncationInput['setting'], turns: number) {
  const conversation: { id: string; positions: number }[] = [];
  const truncatedAt: number[] = [];
  const dropped: string[] = [];
  const order: string[] = [];
  const size = (i: number) => 40 + ((i * 37) % 51);
  for (let turn = 0; turn < turns; turn++) {
    conversation.push({ id: `u${turn}`, positions: size(2 * turn) });
    order.push(`u${turn}`);
    const plan = planTruncation(input({ items: conversation, setting }));
    if (!plan.fits) throw new Error(`turn ${turn} does not fit`);
    expect(plan.keptPositions).toBeLessThanOrEqual(plan.limit.allowed);
    if (plan.drop.length > 0) truncatedAt.push(turn);
    expect(plan.drop).toEqual(conversation.slice(0, plan.drop.length).map((it) => it.id));
    dropped.push(...plan.drop);
    conversation.splice(0, plan.drop.length);
    conversation.push({ id: `a${turn}`, positions: size(2 * turn + 1) });
    order.push(`a${turn}`);
  }
  return { truncatedAt, dropped, order };
}

describe('planTruncation', () => {
  it('keeps a conversation that fits, up to the last position', () => {
    const plan = planTruncation(input({ items: items(400, 450) }));
    expect(plan).toMatchObject({ fits: true, drop: [], keptPositions: 850 });
    expect(plan.limit).toEqual({ allowed: 850, byModel: 850, reserved: 100, conversation: 850 });
  });

  it('retention_ratio 1 drops the oldest items until prompt + the answer cap fit, and no more', () => {
    const setting = { type: 'retention_ratio', retention_ratio: 1 } as const;
    const plan = planTruncation(input({ items: items(300, 300, 200, 100, 1), setting }));
    expect(plan).toMatchObject({ fits: true, drop: ['i0'], keptPositions: 601 });
    const tight = planTruncation(input({ items: items(300, 300, 200, 200, 200), setting }));
    expect(tight).toMatchObject({ fits: true, drop: ['i0', 'i1'], keptPositions: 600 });
  });

  it('retention_ratio drops in one large step, to r of the allowed positions', () => {
    const setting = { type: 'retention_ratio', retention_ratio: 0.8 } as const;
    // 9 x 100 = 900 > 850: down to <= 680, so three items go at once (only what the turn needs would be one).
    const plan = planTruncation(input({ items: items(...Array<number>(9).fill(100)), setting }));
    expect(plan).toMatchObject({ fits: true, drop: ['i0', 'i1', 'i2'], keptPositions: 600 });
    // The turns after it add up again without any drop, until the limit is reached once more.
    const after = planTruncation(input({ items: items(...Array<number>(8).fill(100)), setting }));
    expect(after).toMatchObject({ fits: true, drop: [] });
  });

  it(`auto is retention_ratio ${AUTO_RETENTION_RATIO}: the default truncates in large steps`, () => {
    const setting = { type: 'retention_ratio', retention_ratio: AUTO_RETENTION_RATIO } as const;
    const list = items(300, 300, 200, 100, 100);
    expect(planTruncation(input({ items: list }))).toEqual(planTruncation(input({ items: list, setting })));
    // 9 x 100 = 900 > 850: down to <= 425, five items at once.
    expect(planTruncation(input({ items: items(...Array<number>(9).fill(100)) }))).toMatchObject({
      drop: ['i0', 'i1', 'i2', 'i3', 'i4'],
      keptPositions: 400,
    });
  });

  it('auto past the limit: few truncations, each followed by several turns that only append', () => {
    const auto = simulate('auto', 60);
    // ~7800 positions through a limit of 850: each truncation frees ~425, room for at least 3 turns of <= 180.
    expect(auto.truncatedAt.length).toBeGreaterThanOrEqual(8);
    expect(auto.truncatedAt.length).toBeLessThanOrEqual(20);
    const gaps = auto.truncatedAt.slice(1).map((t, i) => t - auto.truncatedAt[i]);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(3);
    // Only from the front, oldest first: what is kept stays the prefix of every later turn's prompt.
    expect(auto.dropped).toEqual(auto.order.slice(0, auto.dropped.length));
    // Dropping only what each turn needs (retention 1) truncates on nearly every turn past the limit.
    const minimal = simulate({ type: 'retention_ratio', retention_ratio: 1 }, 60);
    const pastLimit = 60 - minimal.truncatedAt[0];
    expect(minimal.truncatedAt.length).toBeGreaterThan(0.8 * pastLimit);
    expect(auto.truncatedAt.length).toBeLessThan(0.4 * pastLimit);
  });

  it('auto lets the items fill autoPositions at most (the bounded window); retention_ratio uses the model', () => {
    // A window of 500 positions for the items (the model would allow 850): 600 is over it, so down to <= 250 at once.
    const bounded = planTruncation(input({ items: items(200, 200, 200), autoPositions: 500 }));
    expect(bounded).toMatchObject({ fits: true, drop: ['i0', 'i1'], keptPositions: 200 });
    expect(bounded.limit.allowed).toBe(500);
    const whole = { type: 'retention_ratio', retention_ratio: AUTO_RETENTION_RATIO } as const;
    expect(planTruncation(input({ items: items(200, 200, 200), autoPositions: 500, setting: whole }))).toMatchObject({
      fits: true,
      drop: [],
    });
    // A window over what the model allows changes nothing.
    const list = items(300, 300, 200, 100, 100);
    expect(planTruncation(input({ items: list, autoPositions: 4000 }))).toEqual(planTruncation(input({ items: list })));
    // Past the window, turn after turn: the items stay within it, truncating in steps of half of it.
    const sizes = Array.from({ length: 40 }, (_, i) => 40 + ((i * 37) % 51));
    let conversation = items(...sizes.slice(0, 1));
    for (let i = 1; i < sizes.length; i++) {
      const plan = planTruncation(input({ items: conversation, autoPositions: 500 }));
      expect(plan.fits && plan.keptPositions).toBeLessThanOrEqual(500);
      conversation = [...conversation.slice(plan.fits ? plan.drop.length : 0), { id: `n${i}`, positions: sizes[i] }];
    }
  });

  it('auto gives an item the window cannot hold the whole model, rather than refusing it', () => {
    // 600 positions alone: over the window's 500, within the model's 850.
    const plan = planTruncation(input({ items: items(100, 600), autoPositions: 500 }));
    expect(plan).toMatchObject({ fits: true, drop: [], keptPositions: 700 });
    expect(plan.limit.allowed).toBe(850);
    const over = planTruncation(input({ items: items(100, 900), autoPositions: 500 }));
    expect(over).toMatchObject({ fits: false, reason: 'newest_item' });
    expect(over.limit.allowed).toBe(850); // the error names the model's limit, not the window's
  });

  it('token_limits.post_instructions lowers the limit; the Thinker still bounds it', () => {
    const setting = { type: 'retention_ratio', retention_ratio: 1, token_limits: { post_instructions: 250 } } as const;
    const plan = planTruncation(input({ items: items(100, 100, 100), setting }));
    expect(plan).toMatchObject({ fits: true, drop: ['i0'], keptPositions: 200 });
    expect(plan.limit.allowed).toBe(250);
    const above = { ...setting, token_limits: { post_instructions: 5000 } };
    expect(planTruncation(input({ items: items(500, 500), setting: above })).limit.allowed).toBe(850);
  });

  it('never drops the newest item that takes positions (the turn being answered)', () => {
    // Empty items after it (a failed answer's empty item) do not make it droppable.
    const plan = planTruncation(input({ items: items(100, 800, 0, 0) }));
    expect(plan).toMatchObject({ fits: true, drop: ['i0'], keptPositions: 800 });
    const ratio = { type: 'retention_ratio', retention_ratio: 0.1 } as const;
    expect(planTruncation(input({ items: items(100, 800), setting: ratio }))).toMatchObject({
      fits: true,
      drop: ['i0'],
      keptPositions: 800,
    });
  });

  it('fails when the newest item alone is over the limit, naming it', () => {
    const plan = planTruncation(input({ items: items(10, 900) }));
    expect(plan).toMatchObject({ fits: false, reason: 'newest_item', newest: { id: 'i1', positions: 900 } });
    if (plan.fits) throw new Error('unreachable');
    const err = truncationError(plan, input({}));
    expect(err.code).toBe('CHORUS_ERR_CONTEXT_LENGTH_EXCEEDED');
    expect(err.message).toContain('item i1 alone takes 900 positions, over the 850');
  });

  it('disabled drops nothing: over the limit it fails, naming the limit and the fixes', () => {
    const fitting = planTruncation(input({ items: items(400, 450), setting: 'disabled' }));
    expect(fitting).toMatchObject({ fits: true, drop: [] });
    const plan = planTruncation(input({ items: items(400, 451), setting: 'disabled' }));
    expect(plan).toMatchObject({ fits: false, reason: 'disabled' });
    if (plan.fits) throw new Error('unreachable');
    const { message } = truncationError(plan, input({}));
    expect(message).toContain('the conversation takes 851 positions, over the 850 it may use');
    expect(message).toContain("the thinker's 1000 positions");
    expect(message).toContain('conversation.item.delete');
    expect(message).toContain('session.truncation to "auto"');
    expect(truncationError(plan, input({}), true).message).toMatch(/^response.input takes 851 positions/);
  });

  it('fails when the instructions leave no room, never dropping them', () => {
    const plan = planTruncation(input({ items: items(10), instructionsPositions: 950 }));
    expect(plan).toMatchObject({ fits: false, reason: 'instructions' });
    if (plan.fits) throw new Error('unreachable');
    expect(truncationError(plan, input({ instructionsPositions: 950 })).message).toContain(
      'the instructions take 950 positions',
    );
  });

  it('keeps at most half the positions for the answer, so a cap as large as the context still leaves a prompt', () => {
    const plan = planTruncation(input({ items: items(300, 300), answerPositions: 4096 }));
    expect(plan.limit.reserved).toBe(500);
    expect(plan).toMatchObject({ fits: true, drop: ['i0'], keptPositions: 300 });
  });
});

describe('parseTruncation', () => {
  const refusal = (value: unknown) => {
    try {
      parseTruncation(value);
    } catch (err) {
      if (err instanceof ClientInputError) return { param: err.param, message: err.message };
      throw err;
    }
    throw new Error(`accepted ${JSON.stringify(value)}`);
  };

  it('takes the three forms OpenAI defines', () => {
    expect(parseTruncation('auto')).toBe('auto');
    expect(parseTruncation('disabled')).toBe('disabled');
    expect(parseTruncation({ type: 'retention_ratio', retention_ratio: 0.8 })).toEqual({
      type: 'retention_ratio',
      retention_ratio: 0.8,
    });
    expect(
      parseTruncation({ type: 'retention_ratio', retention_ratio: 1, token_limits: { post_instructions: 300 } }),
    ).toEqual({ type: 'retention_ratio', retention_ratio: 1, token_limits: { post_instructions: 300 } });
  });

  it('refuses a retention_ratio outside (0, 1], naming the field', () => {
    for (const r of [0, -0.5, 1.5, Number.NaN, '0.5', null, undefined]) {
      const { param, message } = refusal({ type: 'retention_ratio', retention_ratio: r });
      expect(param).toBe('session.truncation.retention_ratio');
      expect(message).toContain('must be a number in (0, 1]');
    }
  });

  it('refuses an unknown type or form, saying what is accepted', () => {
    expect(refusal('sometimes')).toMatchObject({ param: 'session.truncation' });
    expect(refusal('sometimes').message).toContain('"auto", "disabled" or {type: "retention_ratio"');
    expect(refusal(0.5)).toMatchObject({ param: 'session.truncation' });
    expect(refusal({ type: 'keep_last', retention_ratio: 0.5 })).toMatchObject({ param: 'session.truncation.type' });
    expect(refusal({ retention_ratio: 0.5 }).message).toContain('must be "retention_ratio"');
  });

  it('refuses bad token_limits and misspelt fields', () => {
    const base = { type: 'retention_ratio', retention_ratio: 0.5 };
    const post = 'session.truncation.token_limits.post_instructions';
    for (const p of [0, -3, 1.5, '100', null])
      expect(refusal({ ...base, token_limits: { post_instructions: p } }).param).toBe(post);
    expect(refusal({ ...base, token_limits: 100 }).param).toBe('session.truncation.token_limits');
    expect(refusal({ ...base, token_limits: { post_instruction: 100 } }).message).toContain(
      'post_instruction is not a field of session.truncation.token_limits',
    );
    expect(refusal({ ...base, ratio: 0.5 }).message).toContain('ratio is not a field of session.truncation');
  });

  it('checkTokenLimits: post_instructions may not be above the positions less the answer cap', () => {
    const setting = parseTruncation({
      type: 'retention_ratio',
      retention_ratio: 1,
      token_limits: { post_instructions: 900 },
    });
    expect(() => checkTokenLimits(setting, 1000, 100)).not.toThrow();
    expect(() => checkTokenLimits(setting, 1000, 101)).toThrow(/post_instructions is 900.*at most 899/);
    expect(() => checkTokenLimits(setting, null, 101)).not.toThrow(); // the Thinker's positions are unknown
  });
});
