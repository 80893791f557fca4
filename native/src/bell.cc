#include "bell.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "futex.h"

namespace chorus {

struct BellWaiter::Handles {
  uv_poll_t poll;
  uv_timer_t timer;
  int open = 0;  // handles not closed yet: the struct is freed by the last close callback
};

namespace {

[[noreturn]] void ThrowShm(Napi::Env env, const std::string& message) {
  Napi::Error err = Napi::Error::New(env, message);
  err.Set("code", Napi::String::New(env, "CHORUS_ERR_SHM"));
  throw err;
}

}  // namespace

BellWaiter::BellWaiter(Napi::Env env, Ring* ring, Napi::Reference<Napi::Object>* owner)
    : env_(env), ring_(ring), owner_(owner), context_(env, "chorus:shm:bell") {
  uv_loop_t* loop = nullptr;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok || loop == nullptr) ThrowShm(env, "no event loop to wait on");
  auto* handles = new Handles();
  int err = uv_poll_init(loop, &handles->poll, ring->bellFd());
  if (err != 0) {
    delete handles;  // a failed uv_poll_init registers nothing
    ThrowShm(env, std::string("cannot watch the doorbell of ring ") + ring->name() + ": " + uv_strerror(err));
  }
  uv_timer_init(loop, &handles->timer);  // cannot fail
  handles_ = handles;
  handles_->open = 2;
  handles_->poll.data = this;
  handles_->timer.data = this;
}

BellWaiter::~BellWaiter() { Stop(); }

Napi::Promise BellWaiter::Start(Napi::Env env, double deadlineMs) {
  if (deferred_ != nullptr) ThrowShm(env, "a wait is already pending on this ring (single consumer)");
  deferred_ = std::make_unique<Napi::Promise::Deferred>(env);
  Napi::Promise promise = deferred_->Promise();
  owner_->Ref();
  if (handles_ == nullptr) {
    Settle(WaitStatus::kClosed);
  } else if (ring_->ArmDataBell()) {
    Settle(WaitStatus::kReady);
  } else if (NowMs() >= deadlineMs) {
    Settle(WaitStatus::kTimeout);
  } else {
    uv_poll_start(&handles_->poll, UV_READABLE, OnPoll);
    deadlineMs_ = deadlineMs;
    if (std::isfinite(deadlineMs)) StartTimer();
  }
  return promise;
}

void BellWaiter::OnPoll(uv_poll_t* poll, int status, int events) {
  auto* self = static_cast<BellWaiter*>(poll->data);
  if (self == nullptr) return;
  self->DrainBell();
  self->SettleFromLoop(WaitStatus::kReady);
}

bool BellWaiter::SettleIfReady() {
  if (deferred_ == nullptr || handles_ == nullptr || !ring_->HasData()) return false;
  DrainBell();
  Settle(WaitStatus::kReady);
  return true;
}

// Drains the doorbell: one wait ends however many frames rang. Non-blocking, so this stops at empty.
void BellWaiter::DrainBell() {
  char bytes[64];
  while (read(ring_->bellFd(), bytes, sizeof bytes) > 0) {
  }
}

// libuv's timers run on the loop's cached monotonic time, which may lag the wall clock of the deadline: a timer
// that fires early is started again for the rest.
void BellWaiter::StartTimer() {
  auto delay = static_cast<uint64_t>(std::max(0.0, std::ceil(deadlineMs_ - NowMs())));
  uv_timer_start(&handles_->timer, OnTimer, delay, 0);
}

void BellWaiter::OnTimer(uv_timer_t* timer) {
  auto* self = static_cast<BellWaiter*>(timer->data);
  if (self == nullptr) return;
  if (NowMs() < self->deadlineMs_) return self->StartTimer();
  self->SettleFromLoop(WaitStatus::kTimeout);
}

void BellWaiter::SettleFromLoop(WaitStatus status) {
  Napi::HandleScope handles(env_);
  Napi::CallbackScope scope(env_, context_);
  Settle(status);
}

void BellWaiter::Settle(WaitStatus status) {
  if (handles_ != nullptr) {
    uv_poll_stop(&handles_->poll);
    uv_timer_stop(&handles_->timer);
  }
  ring_->DisarmDataBell();
  if (deferred_ == nullptr) return;
  std::unique_ptr<Napi::Promise::Deferred> deferred = std::move(deferred_);
  try {
    deferred->Resolve(Napi::Number::New(env_, static_cast<int>(status)));
    owner_->Unref();  // last: may make the JS Ring collectable
  } catch (const Napi::Error&) {
    // The environment is being torn down (a close from a finalizer): nobody is left to tell.
  }
}

void BellWaiter::Stop() {
  if (handles_ == nullptr) return;
  Settle(WaitStatus::kClosed);
  Handles* h = handles_;
  handles_ = nullptr;
  auto closed = [](uv_handle_t* handle) {
    auto* owner = static_cast<Handles*>(handle->data);
    if (--owner->open == 0) delete owner;
  };
  // After uv_close only the close callbacks run: they get the Handles through data.
  h->poll.data = h;
  h->timer.data = h;
  uv_close(reinterpret_cast<uv_handle_t*>(&h->poll), closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&h->timer), closed);
}

}  // namespace chorus
