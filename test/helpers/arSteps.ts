/** A fake runner loop for ArScheduler tests: one step planned and run; every item that samples feeds back one token. */
import type { ArScheduler, SchedulerPlan } from '../../src/sched/ArScheduler.ts';

export function step(s: ArScheduler, available: Map<string, number>): SchedulerPlan {
  const plan = s.schedule();
  s.update(plan);
  for (const item of plan.items) {
    if (!item.sample) continue;
    const n = available.get(item.requestId)! + 1;
    available.set(item.requestId, n);
    s.setAvailable(item.requestId, n);
  }
  return plan;
}
