// Cross-process futex wait/wake on a 32-bit word that lives in shared memory.
//
// The words are NOT process-private (no FUTEX_PRIVATE_FLAG): the kernel keys a shared futex by the
// physical page, which is what lets a writer in one process wake a reader in another. Atomics.wait
// cannot do this (V8 keys its waiter list by the local address), which is why the addon exists.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <ctime>

namespace chorus {

// Sleeps while *word == expected, until woken or until the absolute wall-clock deadline (Date.now()
// milliseconds; +Infinity = no deadline). The caller must pass the value it just compared: the kernel
// re-checks it atomically, so a wake that lands between the caller's check and this call is not lost.
inline void FutexWaitUntil(std::atomic<uint32_t>* word, uint32_t expected, double deadlineMs) {
  // FUTEX_CLOCK_REALTIME with an absolute timeout makes the deadline mean exactly what Date.now()
  // means in every process, and a spurious wake-up needs no remaining-time arithmetic.
  struct timespec abs;
  struct timespec* timeout = nullptr;
  if (std::isfinite(deadlineMs)) {
    double sec = std::floor(deadlineMs / 1000.0);
    abs.tv_sec = static_cast<time_t>(sec);
    abs.tv_nsec = static_cast<long>((deadlineMs - sec * 1000.0) * 1e6);
    if (abs.tv_nsec >= 1000000000L) abs.tv_nsec = 999999999L;
    if (abs.tv_nsec < 0) abs.tv_nsec = 0;
    timeout = &abs;
  }
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "futex word must be 32 bits");
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME,
          expected, timeout, nullptr, FUTEX_BITSET_MATCH_ANY);
  // EAGAIN (value changed), EINTR, ETIMEDOUT and a real wake all mean the same to the caller: re-check.
}

inline void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

inline double NowMs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) * 1000.0 + static_cast<double>(ts.tv_nsec) / 1e6;
}

}  // namespace chorus
