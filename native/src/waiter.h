// One background thread per ring that performs the producer's blocking futex waits for room off the JS thread
// and settles a Promise through a ThreadSafeFunction. (The consumer waits for data on the JS thread's own event
// loop instead: bell.h.)
//
// Why a dedicated thread rather than Napi::AsyncWorker: a connector keeps a read pending on every inbound
// ring for as long as it is open. On the libuv threadpool (4 threads) a few rings would pin the whole
// pool and starve fs/dns/zlib. A parked thread costs ~8 MiB of reserved (not resident) stack and nothing
// while idle, and it is reused for every wait, so a wait costs one condvar signal, not a thread spawn.
#pragma once

#include <napi.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "ring.h"

namespace chorus {

class Waiter;

// Shared between the waiter and the TSFN finalizer: tells whether the TSFN may still be called.
// Node deletes a TSFN at environment teardown even if threads still hold it, so every call from the
// thread and every Ref/Unref/Release checks `alive` under `mu`.
struct TsfnGuard {
  std::mutex mu;
  bool alive = true;
};

void WaiterCallJs(Napi::Env env, Napi::Function unused, Waiter* waiter, int* status);

class Waiter {
 public:
  Waiter(Napi::Env env, Ring* ring, Napi::Reference<Napi::Object>* owner);
  ~Waiter();  // stops and joins the thread; the ring must still be mapped
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;

  bool pending() const { return deferred_ != nullptr; }
  // JS thread: starts one wait and returns its Promise<number> (a WaitStatus).
  Napi::Promise Start(Napi::Env env, double deadlineMs, uint64_t frameBytes);
  // Cancels a pending wait (it settles with kClosed) and joins the thread. Idempotent.
  void Stop();

 private:
  friend void WaiterCallJs(Napi::Env, Napi::Function, Waiter*, int*);
  using Tsfn = Napi::TypedThreadSafeFunction<Waiter, int, WaiterCallJs>;
  void ThreadMain();
  void Settle(Napi::Env env, int status);

  Ring* ring_;
  Napi::Reference<Napi::Object>* owner_;  // the JS Ring: held strongly while a wait is pending
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool hasRequest_ = false;
  bool stop_ = false;
  double deadlineMs_ = 0;
  uint64_t frameBytes_ = 0;
  std::atomic<bool> cancel_{false};
  Tsfn tsfn_;
  std::shared_ptr<TsfnGuard> guard_;
  std::unique_ptr<Napi::Promise::Deferred> deferred_;
};

}  // namespace chorus
