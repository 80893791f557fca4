/**
 * The first-packet account (bench/ttfp/account/packetAccount.ts) on hand-made marks: a request's path from the
 * client's send through main, the Thinker, the Talker and Code2Wav back to the client, walked backwards into named
 * parts that add up to its TTFP; a missing mark leaves the rest unnamed; a steady-state chunk's trip.
 */
import { describe, expect, it } from 'vitest';
import {
  chunkTripAccount,
  firstPacketAccount,
  slowestPackets,
  summarizeAccounts,
  type ClientTimes,
  type PacketAccount,
  type ProcessTrace,
} from '../../bench/ttfp/account/packetAccount.ts';
import type { MarkRecord, PacketMark, StepRecord } from '../../src/basics.ts';

const R = 'resp_1';

const main = (mark: string, atMs: number, from?: string): PacketMark => ({
  requestId: R,
  mark,
  atMs,
  ...(from ? { from } : {}),
});
const mark = (m: MarkRecord['m'], t: number, extra: Partial<MarkRecord> = {}): MarkRecord => ({ m, r: R, t, ...extra });
const step = (t: number, d: number, x0: number, x: number, id = R): StepRecord => ({ t, d, x0, x, items: [[id, 1]] });

function trace(stage: string, steps: StepRecord[], marks: MarkRecord[]): ProcessTrace {
  return { stage, file: `${stage}_0-1.jsonl`, steps, marks: [...marks].sort((a, b) => a.t - b.t) };
}

/** Send at 0, first audio at the client at 22; a second audio delta (a chunk) at 33. */
function world(
  opts: { talkerPut?: boolean; otherTalkerStep?: boolean; secondInput?: boolean; thinkerCpuMs?: number } = {},
) {
  const mainMarks = [
    main('frame', 1),
    main('create', 1.2),
    main('generate', 1.5),
    main('tokenized', 1.8),
    main('routed', 2),
    main('adding', 2.1),
    main('got', 21, 'code2wav'),
    main('delivered', 21.2, 'code2wav'),
    main('audio_event', 21.3),
    main('handed', 21.5),
    main('written', 21.6),
    main('got', 32.3, 'code2wav'),
    main('delivered', 32.4, 'code2wav'),
    main('audio_event', 32.5),
    main('handed', 32.6),
    main('written', 32.7),
  ];
  const thinker = trace(
    'thinker',
    [{ ...step(3, 10, 0.1, 9), ...(opts.thinkerCpuMs === undefined ? {} : { xc: opts.thinkerCpuMs }) }],
    [
      mark('add', 2.5),
      mark('out', 12.3, { to: 'talker' }),
      mark('put', 13.2, { to: 'talker' }),
      ...(opts.secondInput ? [mark('out', 13.4, { to: 'talker' }), mark('put', 13.5, { to: 'talker' })] : []),
    ],
  );
  const talkerSteps = [step(14, 5, 0.1, 4)];
  if (opts.otherTalkerStep) talkerSteps.unshift(step(12, 1.9, 0.1, 1.5, 'resp_other'));
  const talker = trace('talker', talkerSteps, [
    mark('add', 2.6),
    mark('in', 13.8, { from: 'thinker', g: 13.6 }),
    ...(opts.secondInput ? [mark('in', 13.95, { from: 'thinker', g: 13.9 })] : []),
    mark('out', 18.3, { to: 'code2wav' }),
    ...(opts.talkerPut === false ? [] : [mark('put', 19.1, { to: 'code2wav' })]),
    mark('out', 30, { to: 'code2wav' }),
    mark('put', 30.5, { to: 'code2wav' }),
  ]);
  const code2wav = trace(
    'code2wav',
    [step(19.6, 1, 0.05, 0.7), step(31, 1, 0, 0.8)],
    [
      mark('add', 2.7),
      mark('in', 19.5, { from: 'talker', g: 19.4 }),
      mark('out', 20.4, { to: 'main' }),
      mark('put', 20.7, { to: 'main' }),
      mark('in', 30.9, { from: 'talker', g: 30.8 }),
      mark('out', 31.9, { to: 'main' }),
      mark('put', 32, { to: 'main' }),
    ],
  );
  const client: ClientTimes = { requestId: R, sentAtMs: 0, audioAtMs: [22, 33] };
  return { mainMarks, processes: [thinker, talker, code2wav], client };
}

describe('first-packet account', () => {
  it('names every part from the send to the first audio, and they add up to the TTFP', () => {
    const { mainMarks, processes, client } = world();
    const a = firstPacketAccount(client, mainMarks, processes)!;
    expect(a.totalMs).toBe(22);
    expect(a.unnamedMs).toBeCloseTo(0, 9);
    expect(a.parts.reduce((s, p) => s + p.ms, 0)).toBeCloseTo(22, 9);
    expect(a.parts.every((p) => p.kind !== 'unnamed')).toBe(true);
    const byName = Object.fromEntries(a.parts.map((p) => [p.name, p.ms]));
    expect(byName['client send -> main frame (ws, loopback)']).toBeCloseTo(1, 9);
    expect(byName['main: validate + tokenize']).toBeCloseTo(0.3, 9);
    expect(byName['IPC add main -> thinker']).toBeCloseTo(0.4, 9);
    expect(byName['thinker: add -> first step (queue)']).toBeCloseTo(0.5, 9);
    expect(byName['thinker model']).toBeCloseTo(9, 9);
    expect(byName['hop thinker -> talker (ring write, wake-up)']).toBeCloseTo(0.4, 9);
    expect(byName['talker model']).toBeCloseTo(4, 9);
    expect(byName['code2wav model']).toBeCloseTo(0.7, 9);
    expect(byName['hop code2wav -> main (ring write, wake-up)']).toBeCloseTo(0.3, 9);
    expect(byName['loopback + client frame parse']).toBeCloseTo(0.4, 9);
    // In path order: the client's send first, its arrival last.
    expect(a.parts[0].name).toBe('client send -> main frame (ws, loopback)');
    expect(a.parts.at(-1)!.name).toBe('loopback + client frame parse');
    const model = a.parts.filter((p) => p.kind === 'model').reduce((s, p) => s + p.ms, 0);
    expect(model).toBeCloseTo(13.7, 9);
  });

  it("ends main's write at the client's arrival where the client read it before main's call returned", () => {
    const { mainMarks, processes, client } = world();
    const a = firstPacketAccount({ ...client, audioAtMs: [21.55, 33] }, mainMarks, processes)!;
    const byName = Object.fromEntries(a.parts.map((p) => [p.name, p.ms]));
    expect(byName['main: ws write']).toBeCloseTo(0.05, 9);
    expect(byName['loopback + client frame parse']).toBe(0);
    expect(a.unnamedMs).toBeCloseTo(0, 9);
    expect(a.parts.reduce((sum, p) => sum + p.ms, 0)).toBeCloseTo(21.55, 9);
  });

  it("names the part of a model's run its process spent off a core (window less its CPU time) apart", () => {
    const { mainMarks, processes, client } = world({ thinkerCpuMs: 6.5 });
    const a = firstPacketAccount(client, mainMarks, processes)!;
    expect(a.unnamedMs).toBeCloseTo(0, 9);
    expect(a.parts.reduce((s, p) => s + p.ms, 0)).toBeCloseTo(22, 9);
    const thinker = a.parts.filter((p) => p.name.startsWith('thinker model'));
    expect(thinker.map((p) => [p.name, p.kind])).toEqual([
      ['thinker model', 'model'],
      ['thinker model: waiting for a core', 'preempted'],
    ]);
    expect(thinker[0].ms).toBeCloseTo(6.5, 9);
    expect(thinker[1].ms).toBeCloseTo(2.5, 9);
    // A CPU time above the window (other threads of the process) leaves the whole window to the model.
    const over = firstPacketAccount(client, mainMarks, world({ thinkerCpuMs: 9.4 }).processes)!;
    expect(over.parts.find((p) => p.name === 'thinker model')!.ms).toBeCloseTo(9, 9);
    expect(over.parts.some((p) => p.kind === 'preempted')).toBe(false);
  });

  it('a step that waited for another request names that wait and leaves the rest unnamed', () => {
    const { mainMarks, processes, client } = world({ otherTalkerStep: true });
    // The Talker's step started at 14, after its input (13.8) but the other request's step ran until 13.9.
    const a = firstPacketAccount(client, mainMarks, processes)!;
    const wait = a.parts.find((p) => p.name === "talker: waited for other requests' steps")!;
    expect(wait.ms).toBeCloseTo(0.1, 9);
    expect(a.unnamedMs).toBeCloseTo(13.9, 9);
    expect(a.parts[0]).toMatchObject({ name: 'unnamed', kind: 'unnamed' });
  });

  it('a step that started late goes back through the input that woke its stage, not a later one', () => {
    const { mainMarks, processes, client } = world({ secondInput: true });
    const a = firstPacketAccount(client, mainMarks, processes)!;
    expect(a.unnamedMs).toBeCloseTo(0, 9);
    // The Talker's step began at 14, after both inputs: it waited from the first (13.8), the one that woke it.
    expect(a.parts.find((p) => p.name === 'talker: input handed in -> step')!.ms).toBeCloseTo(0.2, 9);
    expect(a.parts.find((p) => p.name === 'hop thinker -> talker (ring write, wake-up)')!.ms).toBeCloseTo(0.4, 9);
  });

  it('a missing mark ends the walk: what it did not reach is unnamed, and still adds up', () => {
    const { mainMarks, processes, client } = world({ talkerPut: false });
    const a = firstPacketAccount(client, mainMarks, processes)!;
    // Back from the client to Code2Wav's input at 19.4; the Talker's put is missing, so 0 -> 19.4 is unnamed.
    expect(a.unnamedMs).toBeCloseTo(19.4, 9);
    expect(a.parts.reduce((s, p) => s + p.ms, 0)).toBeCloseTo(22, 9);
  });

  it("accounts a steady-state chunk's trip from the Talker's hand-off to the client", () => {
    const { mainMarks, processes, client } = world();
    const a = chunkTripAccount(client, 1, 'talker', mainMarks, processes)!;
    expect(a.totalMs).toBeCloseTo(3, 9);
    expect(a.unnamedMs).toBeCloseTo(0, 9);
    expect(a.parts[0].name).toBe('talker: chunk encode, rest of the step');
    expect(a.parts.find((p) => p.name === 'code2wav model')!.ms).toBeCloseTo(0.8, 9);
  });

  it('sums accounts into means per part and per kind', () => {
    const { mainMarks, processes, client } = world();
    const a = firstPacketAccount(client, mainMarks, processes)!;
    const s = summarizeAccounts([a, a])!;
    expect(s.requests).toBe(2);
    expect(s.meanTotalMs).toBe(22);
    expect(s.parts.reduce((sum, p) => sum + p.ms, 0)).toBeCloseTo(22, 9);
    expect(s.byKind.find((k) => k.kind === 'model')!.ms).toBeCloseTo(13.7, 9);
    expect(s.parts[0].name).toBe('client send -> main frame (ws, loopback)');
  });

  it('names where the slowest packets spent more than the mean packet, the largest excess first', () => {
    const { mainMarks, processes, client } = world();
    const a = firstPacketAccount(client, mainMarks, processes)!;
    const slower = (id: string, extra: Record<string, number>): PacketAccount => {
      const parts = a.parts.map((p) => ({ ...p, ms: p.ms + (extra[p.name] ?? 0) }));
      return { ...a, requestId: id, parts, totalMs: parts.reduce((sum, p) => sum + p.ms, 0) };
    };
    const hop = 'IPC add main -> thinker';
    const model = 'thinker model';
    expect(a.parts.map((p) => p.name)).toEqual(expect.arrayContaining([hop, model]));
    const slow = slowestPackets([a, a, slower('b', { [hop]: 20, [model]: 4 }), slower('c', { [model]: 0.3 })], 2);
    expect(slow.map((p) => p.requestId)).toEqual(['b', 'c']);
    // Against means that hold a quarter of b's extra (and of c's 0.3 ms): 20 - 5 and 4 - 1.075 ms over.
    expect(slow[0].over.map((o) => o.name)).toEqual([hop, model]);
    expect(slow[0].over[0].excessMs).toBeCloseTo(15, 9);
    expect(slow[0].over[1].excessMs).toBeCloseTo(2.925, 9);
    expect(slow[1].over).toEqual([]); // nothing 0.5 ms over its mean
    expect(slowestPackets([], 2)).toEqual([]);
  });
});
