/**
 * The Thinker's budget for encoded media rows, in main: a request's rows (numEmbeddings x width x 4 bytes) count
 * against its Thinker instance from admission to its end; rows alone over the budget are refused with
 * CHORUS_ERR_MEDIA_ROWS_BUDGET naming the items and the fix; rows that fit the budget but not beside what is held
 * wait (a pending admission) and are admitted when a release makes room; each change reaches the metrics' channel.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { firstValueFrom, Subject, toArray } from 'rxjs';
import { channelNames } from '../../src/common/diagnostics.ts';
import type { OutputEvent, RequestHandle } from '../../src/common/engine.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { logger } from '../../src/common/log.ts';
import { MediaRowsBudget, mediaRowsBudgetOf, RowsWait } from '../../src/engine/MediaRowsBudget.ts';
import type { PreparedPrompt } from '../../src/engine/mediaPrompt.ts';
import { PendingAdmissions } from '../../src/engine/requests/PendingAdmission.ts';
import { configWith } from '../helpers/engine.ts';

/** A prompt of clips with these row counts (what the budget reads of it). */
const clips = (...rows: number[]) =>
  ({
    promptTokenIds: [],
    spans: [],
    items: rows.map((numEmbeddings, i) => ({ numEmbeddings, what: `messages[0].content[${i}] (video)` })),
  }) as unknown as PreparedPrompt;

const events: unknown[] = [];
const listen = (message: unknown) => events.push(message);
subscribe(channelNames.mediaRows, listen);
afterEach(() => {
  events.length = 0;
});
afterAll(() => unsubscribe(channelNames.mediaRows, listen));

describe('MediaRowsBudget', () => {
  it('charges from admission to the end; refuses rows alone over the budget; says when others must end first', () => {
    const budget = new MediaRowsBudget(1000, 4); // 250 rows of 1 float
    expect(budget.bytesOf(clips(100, 50))).toBe(600);
    budget.check(clips(200), ['t#0']);
    budget.charge('a', 't#0', clips(200));
    expect(budget.heldBytes('t#0')).toBe(800);
    expect(() => budget.check(clips(100), ['t#0'])).toThrow(RowsWait); // 800 + 400 > 1000
    budget.check(clips(100), ['t#0', 't#1']); // another instance has room
    const over = (() => {
      try {
        budget.check(clips(200, 100), ['t#0']);
      } catch (err) {
        return err as ChorusError;
      }
      return null;
    })();
    expect(over?.code).toBe(ErrorCodes.MEDIA_ROWS_BUDGET);
    expect(over?.message).toMatch(/1200 bytes .*content\[0\] \(video\) 200 rows.*at most 1000 .*media_rows_bytes/);
    expect(budget.release('a')).toBe(true);
    expect(budget.release('a')).toBe(false);
    expect(budget.heldBytes('t#0')).toBe(0);
    expect(events).toEqual([
      { event: 'held', instance: 't#0', bytes: 800 },
      { event: 'refused' },
      { event: 'held', instance: 't#0', bytes: 0 },
    ]);
  });

  it("a graph's Thinker: engine.media_rows_bytes, rows of its hidden size; refused on another stage", () => {
    const graph = configWith('tiny-omni.yaml', {
      'max_num_seqs: 16 # sequences decoded together in one step':
        'max_num_seqs: 16 # sequences decoded together in one step\n      media_rows_bytes: 2MiB',
    });
    const budget = mediaRowsBudgetOf(graph);
    expect([budget.budgetBytes, budget.rowBytes]).toEqual([2 * 1024 * 1024, 256 * 4]);
    expect(() =>
      configWith('tiny-omni.yaml', {
        'max_num_batched_tokens: 600 # the Talker prefills a burst in groups too':
          'max_num_batched_tokens: 600 # the Talker prefills a burst in groups too\n      media_rows_bytes: 1MiB',
      }),
    ).toThrow(/media_rows_bytes: only the thinker/);
  });

  it('a request without room waits, and is admitted on the retry after a release', async () => {
    const graph = configWith('tiny-omni.yaml');
    const budget = new MediaRowsBudget(1000, 4);
    const pending = new PendingAdmissions({ graph, health: () => [], log: logger });
    budget.charge('first', 't#0', clips(200));
    const real = new Subject<OutputEvent>();
    const admit = (): RequestHandle => {
      budget.check(clips(100), ['t#0']);
      budget.charge('second', 't#0', clips(100));
      return { requestId: 'second', prompt: { text: 0, audio: 0, image: 0, video: 100 }, events: real } as never;
    };
    let handle: RequestHandle | null = null;
    try {
      handle = admit();
    } catch (err) {
      handle = pending.wait(err, 'second', { messages: [], modalities: ['text'] } as never, clips(100), admit);
    }
    expect(events.at(-1)).toEqual({ event: 'wait' });
    expect(pending.holds('second')).toBe(true);
    const seen = firstValueFrom(handle.events.pipe(toArray()));
    pending.retry(); // nothing released yet: it stays
    await Promise.resolve();
    expect(pending.holds('second')).toBe(true);
    expect(budget.release('first')).toBe(true);
    pending.retry();
    await Promise.resolve();
    expect(pending.holds('second')).toBe(false);
    expect(budget.heldBytes('t#0')).toBe(400);
    const done = { type: 'done', finishReason: 'stop' } as OutputEvent;
    real.next(done);
    real.complete();
    expect(await seen).toEqual([done]);
  });
});
