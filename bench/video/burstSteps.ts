/**
 * Where one burst's clip spent its time, piece by piece (`burst.ts --steps`): read from the stage processes' step
 * traces (src/worker/StepTrace.ts, on the machine's monotonic clock, which the bench shares), in ms from the clip
 * request's send. The clip is the one request the vision encoder sees in the burst's window (the texts go to no
 * encoder). The pieces, in the chain's order:
 *
 *   atEncoder     the encoder has the request's add: main has parsed the body, decoded the clip, planned the request
 *   mediaIn       the clip's frames reached the encoder
 *   encode        the encoder's steps that ran the clip (its pieces, `stream_groups` groups a step): [start of the
 *                 first, ms to the end of the last]
 *   rowsIn        its first rows reached the Thinker (the first piece)
 *   rowsLastIn    its last rows reached the Thinker
 *   clipSteps     the Thinker's steps with the clip's positions: [start, ms, the clip's positions, requests in it]
 *   textsBefore   Thinker ms of steps without the clip between the texts' send and the clip's last step (what the
 *                 texts' prefills and decodes put on the Thinker before the clip's first token)
 */
import type { ProcessTrace } from '../ttfp/account/packetAccount.ts';

export interface ClipPieces {
  readonly atEncoder: number | null;
  readonly mediaIn: number | null;
  readonly encode: readonly [number, number] | null;
  readonly rowsIn: number | null;
  readonly rowsLastIn: number | null;
  readonly clipSteps: readonly (readonly [number, number, number, number])[];
  readonly textsBefore: number;
}

/** The clip's pieces in the burst sent at `sentAt` (monotonic ms), its texts sent at `textsAt`, ended by `endAt`. */
export function clipPieces(
  traces: readonly ProcessTrace[],
  sentAt: number,
  textsAt: number,
  endAt: number,
): ClipPieces {
  const within = (t: number) => t >= sentAt && t <= endAt;
  const of = (prefix: string) => traces.filter((p) => p.stage.startsWith(prefix));
  const encoders = of('image-encoder');
  const thinkers = of('thinker');
  const clip = encoders.flatMap((p) => p.marks).find((m) => m.m === 'add' && within(m.t))?.r;
  const rel = (t: number) => Math.round(t - sentAt);
  const marks = (ps: readonly ProcessTrace[], kind: string) =>
    ps.flatMap((p) => p.marks).filter((m) => m.m === kind && m.r === clip && within(m.t));
  const mark = (ps: readonly ProcessTrace[], kind: string, last = false) => {
    const found = last ? marks(ps, kind).at(-1) : marks(ps, kind)[0];
    return found ? rel(found.t) : null;
  };
  const runs = encoders.flatMap((p) => p.steps).filter((s) => s.items.some(([r]) => r === clip) && within(s.t));
  const [first, last] = [runs[0], runs.at(-1)];
  const steps = thinkers.flatMap((p) => p.steps).filter((s) => within(s.t));
  const withClip = steps.filter((s) => s.items.some(([r]) => r === clip));
  const lastClipStep = withClip.at(-1)?.t ?? endAt;
  const textsBefore = steps
    .filter((s) => s.t >= textsAt && s.t < lastClipStep && !s.items.some(([r]) => r === clip))
    .reduce((ms, s) => ms + s.d, 0);
  return {
    atEncoder: mark(encoders, 'add'),
    mediaIn: mark(encoders, 'in'),
    encode: first && last ? [rel(first.t), Math.round(last.t + last.d - first.t)] : null,
    rowsIn: mark(thinkers, 'in'),
    rowsLastIn: mark(thinkers, 'in', true),
    clipSteps: withClip.map(
      (s) => [rel(s.t), Math.round(s.d), s.items.find(([r]) => r === clip)![1], s.items.length] as const,
    ),
    textsBefore: Math.round(textsBefore),
  };
}
