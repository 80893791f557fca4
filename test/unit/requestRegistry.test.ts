/**
 * The registry's live edge (src/engine/requests/RequestRegistry.ts): onLive hears the first request of a quiet spell
 * and the end of the last one; a request about to go live (its adds sent before its record is added) is heard before
 * it is added, and one that then never comes ends the spell it started.
 */
import { describe, expect, it } from 'vitest';
import { RequestRegistry } from '../../src/engine/requests/RequestRegistry.ts';
import type { RequestRecord } from '../../src/engine/requests/RequestRecord.ts';

const record = (requestId: string) => ({ requestId, release: () => {} }) as unknown as RequestRecord;

describe('RequestRegistry live edge', () => {
  it('a request arriving in a quiet spell is live before its record is added, once', () => {
    const heard: boolean[] = [];
    const requests = new RequestRegistry((live) => heard.push(live));
    requests.arriving();
    expect(heard).toEqual([true]);
    const r = record('a');
    requests.add(r);
    requests.release(r);
    expect(heard).toEqual([true, true, false]);
  });

  it('one that never comes ends the spell it started; beside a live request it changes nothing', () => {
    const heard: boolean[] = [];
    const requests = new RequestRegistry((live) => heard.push(live));
    requests.arriving()();
    expect(heard).toEqual([true, false]);
    const r = record('b');
    requests.add(r);
    requests.arriving()();
    expect(heard).toEqual([true, false, true]);
    requests.release(r);
    expect(heard).toEqual([true, false, true, false]);
  });
});
