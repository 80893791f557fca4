// N-API surface of the shared-memory ring (class Ring and function unlink(name)) and of the strided copies of KV
// stores (copyStrided, fillStrided: strided.h) and of the memory they live in (reserveMemory, releasePages: arena.h).
// The TS declaration of this surface is transport/shm/binding.ts; keep the two in step.
#include <napi.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "arena.h"
#include "bell.h"
#include "coded_error.h"
#include "ring.h"
#include "strided.h"
#include "waiter.h"

namespace chorus {
namespace {

class RingWrap : public Napi::ObjectWrap<RingWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Ring",
                       {
                           InstanceAccessor<&RingWrap::Name>("name"),
                           InstanceAccessor<&RingWrap::Capacity>("capacityBytes"),
                           InstanceAccessor<&RingWrap::MaxFrame>("maxFrameBytes"),
                           InstanceAccessor<&RingWrap::OwnerPid>("ownerPid"),
                           InstanceMethod<&RingWrap::UsedBytes>("usedBytes"),
                           InstanceMethod<&RingWrap::TryWrite>("tryWrite"),
                           InstanceMethod<&RingWrap::TryRead>("tryRead"),
                           InstanceMethod<&RingWrap::WaitForData>("waitForData"),
                           InstanceMethod<&RingWrap::SettleWaitIfReady>("settleWaitIfReady"),
                           InstanceMethod<&RingWrap::WaitForRoom>("waitForRoom"),

                           InstanceMethod<&RingWrap::Close>("close"),
                       });
  }

  // new Ring(name, capacityBytes, create): create=true makes a new segment (O_EXCL), false attaches.
  explicit RingWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<RingWrap>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 3 || !info[0].IsString() || !info[1].IsNumber() || !info[2].IsBoolean()) {
      ThrowCoded(env, "CHORUS_ERR_SHM", "Ring(name: string, capacityBytes: number, create: boolean)");
    }
    std::string name = info[0].As<Napi::String>();
    try {
      if (info[2].As<Napi::Boolean>()) {
        double capacity = info[1].As<Napi::Number>().DoubleValue();
        if (!(capacity >= 0)) ThrowCoded(env, "CHORUS_ERR_SHM", "capacityBytes must be a positive number");
        ring_ = Ring::Create(name, static_cast<uint64_t>(capacity));
      } else {
        ring_ = Ring::Attach(name);
      }
    } catch (const RingError& e) {
      ThrowCoded(env, e.code(), e.what());
    }
  }

  ~RingWrap() override {
    Shutdown();
    dataWaiter_.reset();
    roomWaiter_.reset();
  }

 private:
  Ring& Open(Napi::Env env) {
    if (!ring_) ThrowCoded(env, "CHORUS_ERR_SHM", "ring is closed");
    return *ring_;
  }

  // A NaN deadline would compare false against every clock reading and wait forever.
  static double Deadline(const Napi::CallbackInfo& info, size_t index) {
    if (info.Length() <= index || !info[index].IsNumber() || std::isnan(info[index].As<Napi::Number>().DoubleValue())) {
      ThrowCoded(info.Env(), "CHORUS_ERR_SHM", "deadlineMs must be a number (Date.now() milliseconds, or Infinity)");
    }
    return info[index].As<Napi::Number>().DoubleValue();
  }

  // Waiter threads read the mapping, so they are joined before it is unmapped. The Waiter objects
  // themselves outlive close(): a settle already queued to the JS thread still needs them.
  void Shutdown() {
    if (dataWaiter_) dataWaiter_->Stop();
    if (roomWaiter_) roomWaiter_->Stop();
    ring_.reset();
  }

  Napi::Value Name(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), Open(info.Env()).name()); }
  Napi::Value Capacity(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(Open(info.Env()).capacity()));
  }
  Napi::Value MaxFrame(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(Open(info.Env()).maxFrameBytes()));
  }
  Napi::Value OwnerPid(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), Open(info.Env()).ownerPid());
  }
  Napi::Value UsedBytes(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(Open(info.Env()).usedBytes()));
  }

  // tryWrite(parts: Uint8Array | Uint8Array[]): boolean. The parts become ONE frame, copied straight
  // into the ring, so a caller never concatenates a header and a payload first.
  Napi::Value TryWrite(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Ring& ring = Open(env);
    Slice inlineParts[8];
    std::vector<Slice> heapParts;
    Slice* parts = inlineParts;
    size_t count = 0;
    auto toSlice = [&](Napi::Value v) -> Slice {
      if (!v.IsTypedArray()) ThrowCoded(env, "CHORUS_ERR_FRAME_INVALID", "tryWrite parts must be Uint8Arrays");
      Napi::TypedArray t = v.As<Napi::TypedArray>();
      auto* base = static_cast<const uint8_t*>(t.ArrayBuffer().Data());
      return Slice{base + t.ByteOffset(), t.ByteLength()};
    };
    if (info[0].IsArray()) {
      Napi::Array arr = info[0].As<Napi::Array>();
      count = arr.Length();
      if (count > 8) {
        heapParts.resize(count);
        parts = heapParts.data();
      }
      for (uint32_t i = 0; i < count; i++) parts[i] = toSlice(arr.Get(i));
    } else {
      parts[0] = toSlice(info[0]);
      count = 1;
    }
    try {
      return Napi::Boolean::New(env, ring.TryWrite(parts, count));
    } catch (const RingError& e) {
      ThrowCoded(env, e.code(), e.what());
    }
  }

  // tryRead(): Buffer | null. Copies one frame out (the copy is what frees the room for the producer).
  Napi::Value TryRead(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Ring& ring = Open(env);
    try {
      int64_t length = ring.PeekFrameLength();
      if (length < 0) return env.Null();
      Napi::Buffer<uint8_t> out = Napi::Buffer<uint8_t>::New(env, static_cast<size_t>(length));
      ring.ConsumeFrame(out.Data(), static_cast<uint64_t>(length));
      return out;
    } catch (const RingError& e) {
      ThrowCoded(env, e.code(), e.what());
    }
  }

  // waitForData(deadlineMs): Promise<0 ready | 1 timeout | 2 closed>.
  Napi::Value WaitForData(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Ring& ring = Open(env);
    double deadlineMs = Deadline(info, 0);
    if (!dataWaiter_) dataWaiter_ = std::make_unique<BellWaiter>(env, &ring, AsReference());
    return dataWaiter_->Start(env, deadlineMs);
  }

  // settleWaitIfReady(): settles a pending waitForData with 0 (ready) now when a frame is there; true when it did.
  Napi::Value SettleWaitIfReady(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Open(env);
    return Napi::Boolean::New(env, dataWaiter_ != nullptr && dataWaiter_->SettleIfReady());
  }

  // waitForRoom(frameBytes, deadlineMs): Promise<0 ready | 1 timeout | 2 closed>.
  Napi::Value WaitForRoom(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Ring& ring = Open(env);
    double frameBytes = info[0].As<Napi::Number>().DoubleValue();
    double deadlineMs = Deadline(info, 1);
    if (!(frameBytes >= 0) || frameBytes > static_cast<double>(ring.maxFrameBytes())) {
      ThrowCoded(env, "CHORUS_ERR_FRAME_TOO_LARGE",
                 "frame of " + std::to_string(frameBytes) + " bytes can never fit ring " + ring.name() +
                     " (max " + std::to_string(ring.maxFrameBytes()) + " bytes)");
    }
    if (!roomWaiter_) roomWaiter_ = std::make_unique<Waiter>(env, &ring, AsReference());
    return roomWaiter_->Start(env, deadlineMs, static_cast<uint64_t>(frameBytes));
  }

  // close(): idempotent. Pending waits settle with 2 (closed). Does not unlink the name.
  Napi::Value Close(const Napi::CallbackInfo& info) {
    Shutdown();
    return info.Env().Undefined();
  }

  Napi::Reference<Napi::Object>* AsReference() { return static_cast<Napi::Reference<Napi::Object>*>(this); }

  std::unique_ptr<Ring> ring_;
  std::unique_ptr<BellWaiter> dataWaiter_;
  std::unique_ptr<Waiter> roomWaiter_;
};

Napi::Value Unlink(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) ThrowCoded(env, "CHORUS_ERR_SHM", "unlink(name: string)");
  try {
    return Napi::Boolean::New(env, Ring::Unlink(info[0].As<Napi::String>()));
  } catch (const RingError& e) {
    ThrowCoded(env, e.code(), e.what());
  }
}

// publishReaderThread(on: boolean): this process's ring waits publish their thread to the rings' producers.
Napi::Value PublishReaderThread(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsBoolean()) ThrowCoded(env, "CHORUS_ERR_SHM", "publishReaderThread(on: boolean)");
  Ring::PublishReaderThread(info[0].As<Napi::Boolean>());
  return env.Undefined();
}

// wakeOffThisCore(tid: number, wake: () => void): runs wake(), which wakes thread tid (a stage process's add), with
// tid kept off this thread's core meanwhile, so the wake-up places it on another core (Ring::KeepOffThisCore).
// What wake() throws is thrown after the affinity is given back.
Napi::Value WakeOffThisCore(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsFunction())
    ThrowCoded(env, "CHORUS_ERR_SHM", "wakeOffThisCore(tid: number, wake: () => void)");
  int64_t tid = info[0].As<Napi::Number>().Int64Value();
  KeptOffThisCore kept(tid > 0 && tid <= INT32_MAX ? static_cast<pid_t>(tid) : 0);
  info[1].As<Napi::Function>().Call({});
  return env.Undefined();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  // No static JS handles: the class constructor lives only on this env's exports object.
  exports.Set("Ring", RingWrap::Define(env));
  exports.Set("unlink", Napi::Function::New(env, Unlink, "unlink"));
  exports.Set("publishReaderThread", Napi::Function::New(env, PublishReaderThread, "publishReaderThread"));
  exports.Set("wakeOffThisCore", Napi::Function::New(env, WakeOffThisCore, "wakeOffThisCore"));
  exports.Set("headerBytes", Napi::Number::New(env, static_cast<double>(kHeaderBytes)));
  exports.Set("copyStrided", Napi::Function::New(env, CopyStrided, "copyStrided"));
  exports.Set("fillStrided", Napi::Function::New(env, FillStrided, "fillStrided"));
  exports.Set("reserveMemory", Napi::Function::New(env, ReserveMemory, "reserveMemory"));
  exports.Set("releasePages", Napi::Function::New(env, ReleasePages, "releasePages"));
  return exports;
}

}  // namespace
}  // namespace chorus

static Napi::Object InitChorusShm(Napi::Env env, Napi::Object exports) { return chorus::Init(env, exports); }
NODE_API_MODULE(chorus_shm, InitChorusShm)
