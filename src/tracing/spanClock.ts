/**
 * The one clock of a process's spans: performance.timeOrigin + performance.now(), as an HrTime. Left to itself the
 * SDK anchors each span to Date.now() when it starts (whole milliseconds) and converts performance times with that
 * span's own offset, so a queue span's end and the step span that starts at the same instant could disagree by up
 * to a millisecond. Every span here is given explicit times from this clock instead: within a process they are
 * exact; across processes they disagree by the error of each process's time origin (about a millisecond).
 */
import type { HrTime } from '@opentelemetry/api';
import { hrTime } from '@opentelemetry/core';

/** `perfMs` (a performance.now() reading, default now) on the span clock. */
export function spanTime(perfMs: number = performance.now()): HrTime {
  return hrTime(perfMs);
}
