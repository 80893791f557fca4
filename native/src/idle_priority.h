// The idle scheduling class (SCHED_IDLE) for the calling thread while a scope runs: the thread then runs only on a core
// no other task wants, below every nice level, so work that is only worth doing on an idle core (a stage keeping its
// model's weights warm between requests) takes no time from a process that has work. Entering the class needs no
// privilege; leaving it does (CAP_SYS_NICE, or an RLIMIT_NICE that covers the thread's nice value), so the class is
// entered only where the kernel was seen to allow the way back.
#pragma once

#include <sched.h>

#include <thread>

namespace chorus {

// Whether a thread of this process may leave SCHED_IDLE again: asked of the kernel once, on a thread of its own (which
// inherits the caller's nice value), so a refusal strands no thread that matters.
inline bool CanLeaveIdlePriority() {
  static const bool can = [] {
    bool left = false;
    std::thread probe([&left] {
      sched_param none{};
      if (sched_setscheduler(0, SCHED_IDLE, &none) != 0) return;
      left = sched_setscheduler(0, SCHED_OTHER, &none) == 0;
    });
    probe.join();
    return left;
  }();
  return can;
}

// The calling thread at SCHED_IDLE while in scope, when it runs at SCHED_OTHER and may come back to it.
class AtIdlePriority {
 public:
  AtIdlePriority() : entered_(sched_getscheduler(0) == SCHED_OTHER && CanLeaveIdlePriority() && Set(SCHED_IDLE)) {}
  ~AtIdlePriority() {
    if (entered_) Set(SCHED_OTHER);
  }
  AtIdlePriority(const AtIdlePriority&) = delete;
  AtIdlePriority& operator=(const AtIdlePriority&) = delete;
  bool entered() const { return entered_; }

 private:
  static bool Set(int policy) {
    sched_param none{};
    return sched_setscheduler(0, policy, &none) == 0;
  }
  const bool entered_;
};

}  // namespace chorus
