#include "waiter.h"

namespace chorus {

void WaiterCallJs(Napi::Env env, Napi::Function, Waiter* waiter, int* status) {
  int value = *status;
  delete status;
  // env is null when Node drains the queue at environment teardown: the waiter may be gone by then.
  if (env != nullptr && waiter != nullptr) waiter->Settle(env, value);
}

Waiter::Waiter(Napi::Env env, Ring* ring, Napi::Reference<Napi::Object>* owner)
    : ring_(ring), owner_(owner), guard_(std::make_shared<TsfnGuard>()) {
  auto* finalizerGuard = new std::shared_ptr<TsfnGuard>(guard_);
  tsfn_ = Tsfn::New(
      env, "chorus:shm:waitForRoom", 0, 1, this,
      [](Napi::Env, std::shared_ptr<TsfnGuard>* g, Waiter*) {
        {
          std::lock_guard<std::mutex> lock((*g)->mu);
          (*g)->alive = false;
        }
        delete g;
      },
      finalizerGuard);
  // An idle waiter must not keep the process alive; Start() refs it while a wait is pending,
  // exactly like a timer would.
  tsfn_.Unref(env);
  thread_ = std::thread(&Waiter::ThreadMain, this);
}

Waiter::~Waiter() {
  Stop();
  std::lock_guard<std::mutex> lock(guard_->mu);
  if (guard_->alive) tsfn_.Release();
}

Napi::Promise Waiter::Start(Napi::Env env, double deadlineMs, uint64_t frameBytes) {
  if (deferred_ != nullptr) {
    // The TS layer serialises waits per ring; two at once would mean two consumers on an SPSC ring.
    Napi::Error err = Napi::Error::New(env, "a wait is already pending on this ring (single consumer/producer)");
    err.Set("code", Napi::String::New(env, "CHORUS_ERR_SHM"));
    throw err;
  }
  deferred_ = std::make_unique<Napi::Promise::Deferred>(env);
  Napi::Promise promise = deferred_->Promise();
  {
    std::lock_guard<std::mutex> lock(guard_->mu);
    if (guard_->alive) tsfn_.Ref(env);
  }
  owner_->Ref();
  {
    std::lock_guard<std::mutex> lock(mu_);
    hasRequest_ = true;
    deadlineMs_ = deadlineMs;
    frameBytes_ = frameBytes;
  }
  cv_.notify_one();
  return promise;
}

void Waiter::Settle(Napi::Env env, int status) {
  if (deferred_ == nullptr) return;
  std::unique_ptr<Napi::Promise::Deferred> deferred = std::move(deferred_);
  {
    std::lock_guard<std::mutex> lock(guard_->mu);
    if (guard_->alive) tsfn_.Unref(env);
  }
  deferred->Resolve(Napi::Number::New(env, status));
  owner_->Unref();  // last: may make the JS Ring collectable
}

void Waiter::Stop() {
  if (!thread_.joinable()) return;
  cancel_.store(true, std::memory_order_seq_cst);
  ring_->InterruptRoomWait();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void Waiter::ThreadMain() {
  for (;;) {
    double deadlineMs;
    uint64_t frameBytes;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return hasRequest_ || stop_; });
      if (!hasRequest_) return;  // stopping with nothing pending
      hasRequest_ = false;
      deadlineMs = deadlineMs_;
      frameBytes = frameBytes_;
    }
    WaitStatus status = ring_->WaitForRoom(frameBytes, deadlineMs, cancel_);
    {
      std::lock_guard<std::mutex> lock(guard_->mu);
      if (guard_->alive) {
        int* data = new int(static_cast<int>(status));
        if (tsfn_.NonBlockingCall(data) != napi_ok) delete data;
      }
    }
    if (cancel_.load(std::memory_order_acquire)) return;
  }
}

}  // namespace chorus
