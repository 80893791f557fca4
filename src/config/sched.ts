/** `engine.sched` of a stage: `idle` puts its processes in Linux's SCHED_IDLE class, refused where that cannot work. */
import { schedIdleUnavailable, type SchedPolicy } from '../common/schedIdle.ts';
import type { Problems } from './problems.ts';

export function resolveSched(index: number, raw: SchedPolicy | undefined, problems: Problems): { sched?: SchedPolicy } {
  if (raw === undefined) return {};
  const why = schedIdleUnavailable();
  if (why !== null) {
    problems.add(['stages', index, 'engine', 'sched'], `sched: idle cannot be applied: ${why}; remove the key`);
    return {};
  }
  return { sched: raw };
}
