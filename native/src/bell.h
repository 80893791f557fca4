// Waits for a ring's data on the JS thread's own event loop: the ring's doorbell FIFO (Ring::BellPath) under a
// uv_poll, so a frame reaches JS in one wake-up. The thread Waiter (waiter.h) costs two: the futex wakes its
// thread, which then wakes the JS thread through uv_async.
#pragma once

#include <napi.h>
#include <uv.h>

#include <memory>

#include "ring.h"

namespace chorus {

class BellWaiter {
 public:
  BellWaiter(Napi::Env env, Ring* ring, Napi::Reference<Napi::Object>* owner);
  ~BellWaiter();  // Stop()
  BellWaiter(const BellWaiter&) = delete;
  BellWaiter& operator=(const BellWaiter&) = delete;

  // JS thread: one wait, Promise<WaitStatus>; ready at once when a frame is already there.
  Napi::Promise Start(Napi::Env env, double deadlineMs);
  // JS thread: settles the pending wait with kReady now when the ring holds a frame, as the doorbell's callback would
  // (its rung byte drained), so the caller's promise turns run before the event loop polls again. False when no wait
  // is pending or the ring is empty.
  bool SettleIfReady();
  // Settles a pending wait with kClosed and closes the handles; the ring must still be mapped. Idempotent.
  void Stop();

 private:
  struct Handles;  // uv handles live until their close callbacks, which may come after this object is gone
  static void OnPoll(uv_poll_t* poll, int status, int events);
  static void OnTimer(uv_timer_t* timer);
  void DrainBell();
  void StartTimer();
  // From a libuv callback: settles inside a callback scope, so the promise's reactions run before the loop
  // goes on (as after any I/O callback Node runs).
  void SettleFromLoop(WaitStatus status);
  void Settle(WaitStatus status);

  Napi::Env env_;
  Ring* ring_;
  Napi::Reference<Napi::Object>* owner_;  // the JS Ring: held strongly while a wait is pending
  Napi::AsyncContext context_;
  Handles* handles_ = nullptr;
  double deadlineMs_ = 0;  // of the pending wait, Date.now() ms
  std::unique_ptr<Napi::Promise::Deferred> deferred_;
};

}  // namespace chorus
