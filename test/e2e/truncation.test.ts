/**
 * session.truncation on a real pipeline (tiny-omni-text-in with a 512-position Thinker, so a conversation outgrows
 * it in a dozen short turns): "auto" keeps a session answering past the limit, dropping its oldest items and telling
 * the client with conversation.item.deleted, in a few large steps whose turns between hit the prefix cache;
 * retention_ratio drops several items in one step and then leaves the conversation alone for a while; "disabled"
 * fails the turn with a failed response.done naming the limit and the fix; and bad settings are refused at
 * session.update, naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configWith } from '../helpers/engine.ts';
import { RealtimeClient, type ServerEvent } from './serverClient.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';

const MAX_POSITIONS = 512;
const ANSWER_TOKENS = 8;

let served: ServedPipeline | undefined;
let wsUrl: string;

beforeAll(async () => {
  served = await servePipeline(
    configWith('tiny-omni-text-in.yaml', {
      'model: {} # the preset above': `model: {max_positions: ${MAX_POSITIONS}} # the preset above`,
    }),
  );
  ({ wsUrl } = served);
}, 180_000);

afterAll(async () => {
  await served?.close();
});

interface Done {
  status: string;
  status_details: { error?: { type: string; code: string; message: string } } | null;
  usage: { input_tokens: number; input_token_details: { cached_tokens: number } };
}

/** A text session with short answers, and `truncation` as given (absent: the default). */
async function session(truncation?: unknown): Promise<RealtimeClient> {
  const c = await RealtimeClient.connect(wsUrl);
  c.send({
    type: 'session.update',
    session: {
      output_modalities: ['text'],
      max_output_tokens: ANSWER_TOKENS,
      ...(truncation === undefined ? {} : { truncation }),
    },
  });
  const updated = await c.next('session.updated');
  expect((updated.session as { truncation: unknown }).truncation).toEqual(truncation ?? 'auto');
  return c;
}

/** A user turn of ~50 positions, different each time, and its answer. */
async function turn(c: RealtimeClient, i: number): Promise<Done> {
  const text = `Turn ${i}: tell me about the sea and the sky, the wind over the water, the boats that go out.`;
  return (await c.respond(text, {}, 30_000)).response as Done;
}

/** Item ids in conversation order (every item here is added at the end, so the order they were announced in). */
const addedIds = (c: RealtimeClient) => c.ofType('conversation.item.added').map((e) => (e.item as { id: string }).id);
const deletedIds = (events: readonly ServerEvent[]) =>
  events.filter((e) => e.type === 'conversation.item.deleted').map((e) => e.item_id as string);

describe('session.truncation', () => {
  it('auto (the default): past the limit a session keeps answering; the oldest items go, the client told', async () => {
    const c = await session();
    const inputTokens: number[] = [];
    for (let i = 0; i < 16; i++) {
      const done = await turn(c, i);
      expect(done.status, JSON.stringify(done.status_details)).not.toBe('failed');
      inputTokens.push(done.usage.input_tokens);
    }
    const deleted = deletedIds(c.events);
    expect(deleted.length).toBeGreaterThan(4); // 16 turns of ~60 positions are twice what 512 hold
    expect(deleted).toEqual(addedIds(c).slice(0, deleted.length)); // oldest first, never one out of order
    // Every prompt left room for the answer's cap, and the conversation did reach the limit.
    for (const n of inputTokens) expect(n + ANSWER_TOKENS).toBeLessThanOrEqual(MAX_POSITIONS);
    expect(Math.max(...inputTokens)).toBeGreaterThan(MAX_POSITIONS - ANSWER_TOKENS - 80);
    // A turn's deletions come before its response: the client knows what the answer did not read.
    const firstDeleted = c.events.findIndex((e) => e.type === 'conversation.item.deleted');
    expect(c.events[firstDeleted - 1].type).toBe('conversation.item.done'); // the user item of that turn
    // Dropped as conversation.item.delete drops: the server has forgotten it.
    c.send({ type: 'conversation.item.retrieve', item_id: deleted[0] });
    expect((await c.next('error')).error).toMatchObject({ code: 'CHORUS_ERR_NOT_FOUND', param: 'item_id' });
    expect(c.ofType('error')).toHaveLength(1);
    // An out-of-band response with a larger cap reads a shorter view; the conversation itself loses nothing.
    const gone = new Set(deleted);
    const oldestKept = addedIds(c).find((id) => !gone.has(id))!;
    c.send({ type: 'response.create', response: { conversation: 'none', max_output_tokens: 64 } });
    const outOfBand = (await c.next('response.done', () => true, 30_000)).response as Done;
    expect(outOfBand.status).not.toBe('failed');
    expect(outOfBand.usage.input_tokens + 64).toBeLessThanOrEqual(MAX_POSITIONS);
    expect(deletedIds(c.events)).toEqual(deleted);
    c.send({ type: 'conversation.item.retrieve', item_id: oldestKept });
    expect((await c.next('conversation.item.retrieved')).item).toMatchObject({ id: oldestKept });
    c.close();
  }, 120_000);

  it('auto (the default) truncates in a few large steps; the turns between them hit the prefix cache', async () => {
    const c = await session();
    const turns: { dropped: number; input: number; cached: number }[] = [];
    for (let i = 0; i < 24; i++) {
      const from = c.events.length;
      const done = await turn(c, i);
      expect(done.status, JSON.stringify(done.status_details)).not.toBe('failed');
      const { input_tokens: input, input_token_details: details } = done.usage;
      turns.push({ dropped: deletedIds(c.events.slice(from)).length, input, cached: details.cached_tokens });
    }
    const truncating = turns.flatMap((t, i) => (t.dropped > 0 ? [i] : []));
    const first = truncating[0];
    expect(first).toBeGreaterThan(0);
    // ~60 positions a turn, ~490 allowed: each step frees half, room for ~4 turns; never one step per turn.
    expect(truncating.length).toBeGreaterThanOrEqual(2);
    expect(truncating.length).toBeLessThanOrEqual(Math.ceil((turns.length - first) / 3));
    expect(turns[first].dropped).toBeGreaterThanOrEqual(3);
    // Every turn that drops nothing reads its predecessor's prompt from the cache (up to the last partial block).
    for (let i = first + 1; i < turns.length; i++) {
      if (turns[i].dropped > 0) continue;
      expect(turns[i].cached, `turn ${i}: ${JSON.stringify(turns.slice(i - 1, i + 1))}`).toBeGreaterThanOrEqual(
        turns[i - 1].input - 16,
      );
    }
    c.close();
  }, 120_000);

  it('retention_ratio drops several items in one step, then later turns keep the same first items', async () => {
    const c = await session({ type: 'retention_ratio', retention_ratio: 0.5 });
    const deletedByTurn: string[][] = [];
    const firstItemByTurn: string[] = [];
    for (let i = 0; i < 14; i++) {
      const from = c.events.length;
      const done = await turn(c, i);
      expect(done.status, JSON.stringify(done.status_details)).not.toBe('failed');
      deletedByTurn.push(deletedIds(c.events.slice(from)));
      const gone = new Set(deletedIds(c.events));
      firstItemByTurn.push(addedIds(c).find((id) => !gone.has(id))!);
    }
    const first = deletedByTurn.findIndex((d) => d.length > 0);
    expect(first).toBeGreaterThan(0);
    expect(deletedByTurn[first].length).toBeGreaterThanOrEqual(4); // half of ~500 positions in one step
    // The turns right after it drop nothing: they share the conversation's first items (a prefix cache's hits).
    expect(deletedByTurn[first + 1]).toEqual([]);
    expect(deletedByTurn[first + 2]).toEqual([]);
    expect(firstItemByTurn[first + 2]).toBe(firstItemByTurn[first]);
    // Under auto every turn past the limit drops an item or two: here truncations are fewer than the turns past it.
    const truncatingTurns = deletedByTurn.filter((d) => d.length > 0).length;
    expect(truncatingTurns).toBeLessThan(deletedByTurn.length - first);
    expect(c.ofType('error')).toHaveLength(0);
    c.close();
  }, 120_000);

  it('disabled: the turn past the limit fails with its response.done, naming the limit and the fix', async () => {
    const c = await session('disabled');
    let failed: Done | null = null;
    for (let i = 0; i < 16 && !failed; i++) {
      const done = await turn(c, i);
      if (done.status === 'failed') failed = done;
    }
    expect(failed).not.toBeNull();
    const error = failed!.status_details!.error!;
    expect(error.type).toBe('invalid_request_error');
    expect(error.code).toBe('context_length_exceeded'); // OpenAI's code for it
    expect(error.message).toContain(`the thinker's ${MAX_POSITIONS} positions`);
    expect(error.message).toContain('conversation.item.delete');
    expect(error.message).toContain('session.truncation');
    expect(c.ofType('error')).toHaveLength(0); // never a bare error
    expect(c.ofType('conversation.item.deleted')).toHaveLength(0);
    // The fix it names works: the client deletes the oldest items and the session answers again.
    for (const id of addedIds(c).slice(0, 8)) {
      c.send({ type: 'conversation.item.delete', item_id: id });
      await c.next('conversation.item.deleted', (e) => e.item_id === id);
    }
    c.send({ type: 'response.create' });
    const again = (await c.next('response.done', () => true, 30_000)).response as Done;
    expect(again.status).not.toBe('failed');
    c.close();
  }, 120_000);

  it('refuses bad settings at session.update, naming the field; the session keeps what it had', async () => {
    const c = await session({ type: 'retention_ratio', retention_ratio: 0.8 });
    const refused = async (truncation: unknown) => {
      c.send({ type: 'session.update', event_id: 'evt_bad', session: { truncation } });
      return (await c.next('error')).error as { type: string; param: string; message: string; event_id: string };
    };
    const ratio = await refused({ type: 'retention_ratio', retention_ratio: 1.5 });
    expect(ratio).toMatchObject({ type: 'invalid_request_error', param: 'session.truncation.retention_ratio' });
    expect(ratio.message).toContain('(0, 1]');
    expect(ratio.event_id).toBe('evt_bad');
    expect((await refused({ type: 'retention_ratio', retention_ratio: 0 })).param).toBe(
      'session.truncation.retention_ratio',
    );
    expect((await refused({ type: 'sliding_window', retention_ratio: 0.5 })).param).toBe('session.truncation.type');
    expect((await refused('sometimes')).param).toBe('session.truncation');
    const post = 'session.truncation.token_limits.post_instructions';
    expect(
      (await refused({ type: 'retention_ratio', retention_ratio: 0.5, token_limits: { post_instructions: 0 } })).param,
    ).toBe(post);
    const tooHigh = await refused({
      type: 'retention_ratio',
      retention_ratio: 0.5,
      token_limits: { post_instructions: MAX_POSITIONS },
    });
    expect(tooHigh.param).toBe(post);
    expect(tooHigh.message).toContain(`at most ${MAX_POSITIONS - ANSWER_TOKENS}`);
    expect(c.ofType('session.updated')).toHaveLength(1); // none of them changed the session

    const good = { type: 'retention_ratio', retention_ratio: 0.5, token_limits: { post_instructions: 200 } };
    c.send({ type: 'session.update', session: { truncation: good } });
    expect(((await c.next('session.updated')).session as { truncation: unknown }).truncation).toEqual(good);
    c.close();
  }, 60_000);
});
