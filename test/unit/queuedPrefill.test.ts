/**
 * QueuedPrefill: what a request adds to its Thinker instance's queue (its prompt less the leading blocks the cache
 * holds or a request queued ahead names), and that it all leaves again. (Through the router: test/unit/router.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { QueuedPrefill } from '../../src/engine/routing/QueuedPrefill.ts';

const BLOCK = 16;
/** Block names standing for a chain: equal up to `shared` blocks, then this request's own. */
const chain = (shared: number, blocks: number, own: string) =>
  Array.from({ length: blocks }, (_, i) => (i < shared ? `s${i}` : `${own}${i}`));

const ask = (names: string[], promptTokens: number, cachedPositions = 0) => ({
  promptTokens,
  cachedPositions,
  names,
  reusable: Math.floor((promptTokens - 1) / BLOCK),
});

describe('QueuedPrefill', () => {
  it('charges a prompt less what the cache holds and what the requests ahead name, from block 0 on', () => {
    const queue = new QueuedPrefill();
    const first = ask(chain(10, 12, 'a'), 200); // 12 whole blocks of 16, then 8 positions
    expect(queue.charge('t0', first, BLOCK)).toBe(200);
    queue.add('t0', { tokens: 200, names: first.names });
    // Ten blocks shared with the first: it computes 200 - 160.
    expect(queue.charge('t0', ask(chain(10, 12, 'b'), 200), BLOCK)).toBe(40);
    // Another instance holds none of them.
    expect(queue.charge('t1', ask(chain(10, 12, 'b'), 200), BLOCK)).toBe(200);
    // The cache holds 12 blocks of it: the queue adds nothing past them (its 13th block is its own).
    expect(queue.charge('t0', ask(chain(10, 12, 'b'), 200, 192), BLOCK)).toBe(8);
    // A chain that differs at block 0 shares nothing: the walk stops at the first block nobody ahead names.
    expect(queue.charge('t0', ask(['x', ...chain(10, 11, 'c').slice(1)], 200), BLOCK)).toBe(200);
    // The same prompt again: every whole block before its last position, and at least its last position to compute.
    expect(queue.charge('t0', ask(first.names, 192 + 1), BLOCK)).toBe(1);
    expect(queue.tokens('t0')).toBe(200);
  });

  it('a request leaving takes its charge and only its own hold on the names: nothing is left once all left', () => {
    const queue = new QueuedPrefill();
    const a = { tokens: 200, names: chain(10, 12, 'a') };
    const b = { tokens: 40, names: chain(10, 12, 'b') };
    queue.add('t0', a);
    queue.add('t0', b);
    expect(queue.tokens('t0')).toBe(240);
    expect(queue.queuedNames('t0')).toBe(10 + 2 + 2);
    queue.remove('t0', a); // its first token: b still names the shared blocks
    expect(queue.tokens('t0')).toBe(40);
    expect(queue.charge('t0', ask(chain(10, 12, 'c'), 200), BLOCK)).toBe(40);
    queue.remove('t0', b); // cancelled
    expect(queue.tokens('t0')).toBe(0);
    expect(queue.queuedNames('t0')).toBe(0);
    expect(queue.charge('t0', ask(chain(10, 12, 'c'), 200), BLOCK)).toBe(200);
  });
});
