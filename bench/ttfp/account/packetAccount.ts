/**
 * Where each millisecond of one audio packet's trip went: the first packet's (a request's send -> its first audio
 * delta at the client) and one steady-state chunk's (the Talker handing a codec chunk on -> its audio at the client).
 *
 * The walk goes backwards from the client's arrival along what each moment waited for, over the marks every process
 * left on the machine's one monotonic clock (src/common/packetMarks.ts): main's (frame, create, generate,
 * tokenized, routed, adding, got, delivered, audio_event, handed, written), each stage process's step trace (every
 * step with its model run's window, and its add / in / out / put marks: src/worker/StepTrace.ts), and the client's
 * send and arrival times. A step waited for the latest of: the stage's previous step ending, the request's add, and
 * the first input chunk of the request handed to the core after those (the one that woke the idle stage). So the
 * parts are consecutive intervals between two marks, each named by what happens between them, and they add up to the
 * packet's time; a link the marks cannot make (a missing mark) ends the walk and what is left of the packet's time is
 * "unnamed". Pure: tested on hand-made marks.
 */
import type { MarkRecord, PacketMark, StepRecord } from '../../../src/basics.ts';

/** What a part of the time was. */
export type PartKind =
  'model' | 'preempted' | 'parse' | 'admission' | 'queue' | 'hop' | 'assembly' | 'framing' | 'loop' | 'unnamed';

export interface Part {
  readonly name: string;
  readonly kind: PartKind;
  readonly ms: number;
}

/** One stage process's step trace: its steps (by start) and its marks (by time). */
export interface ProcessTrace {
  readonly stage: string;
  readonly file: string;
  readonly steps: readonly StepRecord[];
  readonly marks: readonly MarkRecord[];
}

/** The client's times of one request, monotonic: its send and each audio delta's arrival. */
export interface ClientTimes {
  readonly requestId: string;
  readonly sentAtMs: number;
  readonly audioAtMs: readonly number[];
}

export interface PacketAccount {
  readonly requestId: string;
  /** The client's time for the packet: first audio - send, or (a chunk) its arrival - the Talker's hand-off. */
  readonly totalMs: number;
  /** In path order (earliest first). */
  readonly parts: readonly Part[];
  /** totalMs minus the named parts. */
  readonly unnamedMs: number;
}

/** A point the walk reached: its time, and how to go on from it (null: the walk ends there). */
interface Node {
  readonly atMs: number;
  readonly back: (() => Step) | null;
}

/** One step back: the part between the earlier node and the later one. */
interface Step {
  readonly name: string;
  readonly kind: PartKind;
  readonly node: Node;
}

const END: Node = { atMs: Number.NaN, back: null };

class RequestMarks {
  readonly main: readonly PacketMark[];
  /** The request's stage processes by stage id (the one that served it). */
  readonly stages = new Map<string, ProcessTrace>();

  constructor(
    readonly requestId: string,
    main: readonly PacketMark[],
    processes: readonly ProcessTrace[],
  ) {
    this.main = main.filter((m) => m.requestId === requestId).sort((a, b) => a.atMs - b.atMs);
    for (const p of processes) if (p.marks.some((m) => m.r === requestId && m.m === 'add')) this.stages.set(p.stage, p);
  }

  mainMarks(mark: string, from?: string): PacketMark[] {
    return this.main.filter((m) => m.mark === mark && (from === undefined || m.from === from));
  }

  stageMarks(stage: string, m: MarkRecord['m'], peer?: string): MarkRecord[] {
    const p = this.stages.get(stage);
    if (!p) return [];
    return p.marks.filter(
      (x) => x.r === this.requestId && x.m === m && (peer === undefined || x.from === peer || x.to === peer),
    );
  }
}

/** The walk over one request's marks. */
class Walk {
  constructor(
    private readonly r: RequestMarks,
    /** Stop at this stage's hand-off of a chunk (the steady-state chunk's start), or null: walk to the send. */
    private readonly stopAtOutOf: string | null,
    private readonly client: ClientTimes,
  ) {}

  /** From the client's arrival of audio delta k back along main's marks to the last stage's put. */
  fromClient(k: number): Node {
    const r = this.r;
    const written = r.mainMarks('written')[k];
    const handed = r.mainMarks('handed')[k];
    const event = r.mainMarks('audio_event')[k];
    if (!written || !handed || !event) return END;
    // The audio came from the stage that main got a chunk from just before the event.
    const delivered = r.main.filter((m) => m.mark === 'delivered' && m.atMs <= event.atMs).at(-1);
    if (!delivered?.from) return END;
    const from = delivered.from;
    const index = r.mainMarks('delivered', from).indexOf(delivered);
    const got = r.mainMarks('got', from)[index];
    const at = (atMs: number, back: (() => Step) | null): Node => ({ atMs, back });
    const putNode = got ? this.put(from, 'main', index, got.atMs) : END;
    const hop = `hop ${from} -> main (ring write, wake-up)`;
    const gotNode = at(got?.atMs ?? Number.NaN, () => ({ name: hop, kind: 'hop', node: putNode }));
    const deliveredNode = at(delivered.atMs, () => ({
      name: 'main: chunk arrival -> handled (event loop)',
      kind: 'loop',
      node: got ? gotNode : END,
    }));
    const eventNode = at(event.atMs, () => ({
      name: 'main: chunk -> audio event',
      kind: 'assembly',
      node: deliveredNode,
    }));
    const handedNode = at(handed.atMs, () => ({
      name: 'main: audio delta framing (base64, JSON)',
      kind: 'framing',
      node: eventNode,
    }));
    // Main marks the write once its call returned; the client, another process, may have read the frame before that
    // (main's thread preempted after the system call): the write ends at the client's arrival then.
    const arrivedAtMs = this.client.audioAtMs[k];
    const writtenNode = at(Math.min(written.atMs, arrivedAtMs), () => ({
      name: 'main: ws write',
      kind: 'framing',
      node: handedNode,
    }));
    return at(arrivedAtMs, () => ({
      name: 'loopback + client frame parse',
      kind: 'hop',
      node: writtenNode,
    }));
  }

  /**
   * The index-th chunk `stage` put towards `to`, which its consumer got at gotAtMs: a put missing, or one that
   * cannot be this chunk's (after the get, or before its hand-off), ends the walk.
   */
  private put(stage: string, to: string, index: number, gotAtMs: number): Node {
    const puts = this.r.stageMarks(stage, 'put', to);
    const outs = this.r.stageMarks(stage, 'out', to);
    const [put, out] = [puts[index], outs[index]];
    if (!put || !out || puts.length !== outs.length || put.t < out.t || put.t > gotAtMs) return END;
    const outNode = this.out(stage, out.t);
    return {
      atMs: put.t,
      back: () => ({ name: `${stage}: chunk encode, rest of the step`, kind: 'assembly', node: outNode }),
    };
  }

  /** A chunk handed to the adapter at outAtMs: within (or after) the step that made it. */
  private out(stage: string, outAtMs: number): Node {
    if (stage === this.stopAtOutOf) return { atMs: outAtMs, back: null };
    const p = this.r.stages.get(stage)!;
    const step = [...p.steps].reverse().find((s) => s.t <= outAtMs);
    if (!step) return { atMs: outAtMs, back: null };
    const modelEnd = step.x0 !== undefined && step.x !== undefined ? step.t + step.x0 + step.x : step.t + step.d;
    return {
      atMs: outAtMs,
      back: () => ({
        name: `${stage}: output after the model (chunk assembly)`,
        kind: 'assembly',
        node: this.stepBody(stage, step, Math.min(modelEnd, outAtMs)),
      }),
    };
  }

  /** A step from its start to `untilMs` (its model's end): setup, then the model. */
  private stepBody(stage: string, step: StepRecord, untilMs: number): Node {
    const start = this.stepStart(stage, step);
    if (step.x0 === undefined || step.x === undefined)
      return { atMs: untilMs, back: () => ({ name: `${stage}: step (no model window)`, kind: 'model', node: start }) };
    const modelStart: Node = {
      atMs: step.t + step.x0,
      back: () => ({ name: `${stage}: step setup (schedule, batch)`, kind: 'assembly', node: start }),
    };
    const waitMs = coreWaitMs(step, untilMs);
    if (waitMs === 0)
      return { atMs: untilMs, back: () => ({ name: `${stage} model`, kind: 'model', node: modelStart }) };
    // The model's run is the process's CPU time in it; the rest of its window the run was off a core (preempted by
    // another process on a shared core), named apart: it is co-running's cost, not the model's.
    const computed: Node = {
      atMs: untilMs - waitMs,
      back: () => ({ name: `${stage} model`, kind: 'model', node: modelStart }),
    };
    return {
      atMs: untilMs,
      back: () => ({ name: `${stage} model: waiting for a core`, kind: 'preempted', node: computed }),
    };
  }

  /** A step's start, and what it waited for: the previous step, the first input in after it, or the add. */
  private stepStart(stage: string, step: StepRecord): Node {
    const p = this.r.stages.get(stage)!;
    const i = p.steps.indexOf(step);
    const prev = i > 0 ? p.steps[i - 1] : undefined;
    const prevEnd = prev ? prev.t + prev.d : Number.NEGATIVE_INFINITY;
    const add = this.r.stageMarks(stage, 'add').find((m) => m.t <= step.t);
    const addAt = add?.t ?? Number.NEGATIVE_INFINITY;
    // The stage was idle for this request from its previous step or the add; the first input handed in after that
    // woke it (a later one may have come before the step started, when the stage was slow to run: that delay is
    // this stage's, not the later input's producer's).
    const idleSince = Math.max(prevEnd, addAt);
    const input = this.r.stageMarks(stage, 'in').find((m) => m.t >= idleSince && m.t <= step.t);
    const inAt = input?.t ?? Number.NEGATIVE_INFINITY;
    const latest = Math.max(prevEnd, inAt, addAt);
    let back: () => Step;
    if (latest === Number.NEGATIVE_INFINITY) return { atMs: step.t, back: null };
    if (latest === prevEnd && prev) {
      const own = prev.items.some(([id]) => id === this.r.requestId);
      back = () => ({
        name: own ? `${stage}: between steps (loop turn)` : `${stage}: waited for other requests' steps`,
        kind: own ? 'loop' : 'queue',
        node: own ? this.stepEndOf(stage, prev) : { atMs: prevEnd, back: null },
      });
    } else if (latest === inAt && input) {
      back = () => ({ name: `${stage}: input handed in -> step`, kind: 'queue', node: this.input(stage, input) });
    } else {
      back = () => ({ name: `${stage}: add -> first step (queue)`, kind: 'queue', node: this.add(stage, add!) });
    }
    return { atMs: step.t, back };
  }

  /** A whole earlier step of the request: its end back through its body. */
  private stepEndOf(stage: string, step: StepRecord): Node {
    const end = step.t + step.d;
    if (step.x0 === undefined || step.x === undefined) return this.stepBody(stage, step, end);
    const modelEnd = step.t + step.x0 + step.x;
    return {
      atMs: end,
      back: () => ({
        name: `${stage}: after the model (outputs, send)`,
        kind: 'assembly',
        node: this.stepBody(stage, step, modelEnd),
      }),
    };
  }

  /** An input chunk handed to the core: back to when the connector gave it, then to the upstream's put. */
  private input(stage: string, input: MarkRecord): Node {
    const from = input.from!;
    const index = this.r.stageMarks(stage, 'in', from).indexOf(input);
    const upstream = input.g === undefined ? END : this.put(from, stage, index, input.g);
    const got: Node = {
      atMs: input.g ?? Number.NaN,
      back: () => ({ name: `hop ${from} -> ${stage} (ring write, wake-up)`, kind: 'hop', node: upstream }),
    };
    return {
      atMs: input.t,
      back: () => ({
        name: `${stage}: chunk arrival -> handed in (decode, event loop)`,
        kind: 'loop',
        node: input.g === undefined ? END : got,
      }),
    };
  }

  /** The request's add in a stage: back to main's adds and main's path from the frame. */
  private add(stage: string, add: MarkRecord): Node {
    const r = this.r;
    const mark = (name: string) => r.mainMarks(name)[0];
    const chain: [string, string, PartKind][] = [
      ['adding', `IPC add main -> ${stage}`, 'hop'],
      ['routed', 'main: commit (to the adds sent)', 'admission'],
      ['tokenized', 'main: admission + routing', 'admission'],
      ['generate', 'main: validate + tokenize', 'parse'],
      ['create', 'main: response plan (template, admission slot)', 'admission'],
      ['frame', 'main: frame parse + dispatch', 'parse'],
    ];
    let node: Node = { atMs: this.client.sentAtMs, back: null };
    let later = 'client send -> main frame (ws, loopback)';
    let laterKind: PartKind = 'hop';
    for (const [name, label, kind] of [...chain].reverse()) {
      const m = mark(name);
      if (!m) return { atMs: add.t, back: null };
      const earlier = node;
      const [partName, partKind] = [later, laterKind];
      node = { atMs: m.atMs, back: () => ({ name: partName, kind: partKind, node: earlier }) };
      [later, laterKind] = [label, kind];
    }
    const earliest = node;
    return { atMs: add.t, back: () => ({ name: later, kind: laterKind, node: earliest }) };
  }
}

/**
 * How much of a step's model window up to `untilMs` its process spent off a core: the window less the process's CPU
 * time in it (`xc`, from traces that record it; 0 without), never below 0 nor above the window.
 */
function coreWaitMs(step: StepRecord, untilMs: number): number {
  if (step.x0 === undefined || step.x === undefined || step.xc === undefined) return 0;
  const windowMs = Math.min(step.x, untilMs - (step.t + step.x0));
  return Math.min(Math.max(0, windowMs), Math.max(0, step.x - step.xc));
}

function walkFrom(node: Node, totalMs: number, requestId: string, startMs: number): PacketAccount {
  const parts: Part[] = [];
  let at = node;
  for (let guard = 0; at.back && guard < 100_000; guard++) {
    const step = at.back();
    if (Number.isNaN(step.node.atMs)) break;
    parts.push({ name: step.name, kind: step.kind, ms: at.atMs - step.node.atMs });
    at = step.node;
  }
  // Where the walk stopped short of the start, the rest is unnamed.
  const rest = at.atMs - startMs;
  if (Number.isFinite(rest) && Math.abs(rest) > 1e-9) parts.push({ name: 'unnamed', kind: 'unnamed', ms: rest });
  parts.reverse();
  const named = parts.filter((p) => p.kind !== 'unnamed').reduce((s, p) => s + p.ms, 0);
  return { requestId, totalMs, parts, unnamedMs: totalMs - named };
}

/** The first packet's account of one request. */
export function firstPacketAccount(
  client: ClientTimes,
  main: readonly PacketMark[],
  processes: readonly ProcessTrace[],
): PacketAccount | null {
  if (client.audioAtMs.length === 0) return null;
  const walk = new Walk(new RequestMarks(client.requestId, main, processes), null, client);
  const totalMs = client.audioAtMs[0] - client.sentAtMs;
  const start = walk.fromClient(0);
  if (Number.isNaN(start.atMs)) return null;
  return walkFrom(start, totalMs, client.requestId, client.sentAtMs);
}

/**
 * The trip of audio delta k (steady state: a middle one): from `upstream` (the Talker) handing its codec chunk on to
 * the client's arrival. Null when the marks do not reach back to `upstream`.
 */
export function chunkTripAccount(
  client: ClientTimes,
  k: number,
  upstream: string,
  main: readonly PacketMark[],
  processes: readonly ProcessTrace[],
): PacketAccount | null {
  if (k >= client.audioAtMs.length) return null;
  const walk = new Walk(new RequestMarks(client.requestId, main, processes), upstream, client);
  const start = walk.fromClient(k);
  if (Number.isNaN(start.atMs)) return null;
  let at = start;
  while (at.back) at = at.back().node;
  if (Number.isNaN(at.atMs)) return null;
  const totalMs = client.audioAtMs[k] - at.atMs;
  return walkFrom(start, totalMs, client.requestId, at.atMs);
}

/** Mean ms per part name over accounts, in path order, with its kind; and the mean total and unnamed. */
export interface AccountSummary {
  readonly requests: number;
  readonly meanTotalMs: number;
  readonly meanUnnamedMs: number;
  readonly parts: readonly (Part & { readonly steps: number })[];
  readonly byKind: readonly { readonly kind: PartKind; readonly ms: number }[];
}

export function summarizeAccounts(accounts: readonly PacketAccount[]): AccountSummary | null {
  if (accounts.length === 0) return null;
  const n = accounts.length;
  const byName = new Map<string, { kind: PartKind; ms: number; steps: number; at: number[] }>();
  for (const a of accounts)
    a.parts.forEach((p, i) => {
      const e = byName.get(p.name) ?? { kind: p.kind, ms: 0, steps: 0, at: [] };
      e.ms += p.ms / n;
      e.steps += 1 / n;
      e.at.push(i / a.parts.length);
      byName.set(p.name, e);
    });
  // In path order: by where on its packets' paths a part first falls, on average.
  const position = (e: { at: number[] }) => e.at.reduce((s, x) => s + x, 0) / e.at.length;
  const ordered = [...byName].sort(([, x], [, y]) => position(x) - position(y));
  const byKind = new Map<PartKind, number>();
  for (const [, e] of byName) byKind.set(e.kind, (byKind.get(e.kind) ?? 0) + e.ms);
  return {
    requests: n,
    meanTotalMs: accounts.reduce((s, a) => s + a.totalMs, 0) / n,
    meanUnnamedMs: accounts.reduce((s, a) => s + a.unnamedMs, 0) / n,
    parts: ordered.map(([name, e]) => ({ name, kind: e.kind, ms: e.ms, steps: e.steps })),
    byKind: [...byKind].map(([kind, ms]) => ({ kind, ms })).sort((a, b) => b.ms - a.ms),
  };
}

/** A packet slower than its run's mean, by part: what it spent beyond each part's mean (AccountSummary.parts). */
export interface SlowPacket {
  readonly requestId: string;
  readonly totalMs: number;
  /** Parts over their mean by `minMs` or more, the largest excess first (a part the packet had twice counts twice). */
  readonly over: readonly { readonly name: string; readonly kind: PartKind; readonly excessMs: number }[];
}

/**
 * The `count` slowest packets of a run, each with where it spent more than the run's mean packet did: a mean hides
 * whether its tail is every packet a little slower or one packet waiting somewhere in particular.
 */
export function slowestPackets(accounts: readonly PacketAccount[], count: number, minMs = 0.5): SlowPacket[] {
  const summary = summarizeAccounts(accounts);
  if (!summary) return [];
  const meanOf = new Map(summary.parts.map((p) => [p.name, p.ms]));
  return [...accounts]
    .sort((a, b) => b.totalMs - a.totalMs)
    .slice(0, count)
    .map((a) => {
      const own = new Map<string, { kind: PartKind; ms: number }>();
      for (const p of a.parts) own.set(p.name, { kind: p.kind, ms: (own.get(p.name)?.ms ?? 0) + p.ms });
      const over = [...own]
        .map(([name, p]) => ({ name, kind: p.kind, excessMs: p.ms - (meanOf.get(name) ?? 0) }))
        .filter((p) => p.excessMs >= minMs)
        .sort((x, y) => y.excessMs - x.excessMs);
      return { requestId: a.requestId, totalMs: a.totalMs, over };
    });
}
