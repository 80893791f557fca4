#include "arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include <v8.h>

#include "coded_error.h"

namespace chorus {
namespace {

// Node's limit for one buffer (buffer.constants.MAX_LENGTH on 64-bit), which KvBufferPool's slabs are sized to.
constexpr size_t kMaxBytes = size_t{1} << 32;

size_t PageBytes() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

// Mappings made here, by address: releasePages refuses any other buffer (madvise on memory V8 or the C heap owns
// would zero it under their feet). A finalizer runs on the thread of the environment that made its buffer, and worker
// threads may each load the addon, hence the lock. Neither is ever destroyed: finalizers can run after static
// destructors, at exit.
std::mutex& mappingsLock = *new std::mutex();
std::unordered_map<void*, size_t>& mappings = *new std::unordered_map<void*, size_t>();

void Unmap(napi_env, void* data, void*) {
  size_t bytes = 0;
  {
    std::lock_guard<std::mutex> hold(mappingsLock);
    auto it = mappings.find(data);
    if (it == mappings.end()) return;
    bytes = it->second;
    mappings.erase(it);
  }
  munmap(data, bytes);
}

}  // namespace

Napi::Value ReserveMemory(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  size_t requested = IntegerArg(info, 0, "reserveMemory: bytes", 1);
  if (requested > kMaxBytes)
    ThrowInvalid(env, "reserveMemory: " + std::to_string(requested) + " bytes is larger than " +
                          std::to_string(kMaxBytes) + ", the most one ArrayBuffer may hold in Node");
  size_t page = PageBytes();
  size_t bytes = (requested + page - 1) / page * page;
  // MAP_NORESERVE: address space only; the kernel commits a page when it is first touched.
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (data == MAP_FAILED) {
    ThrowCoded(env, "CHORUS_ERR_KV_BUDGET",
               "cannot reserve " + std::to_string(bytes) + " bytes of address space for KV stores (" +
                   std::strerror(errno) + "): raise the process's address-space limit (ulimit -v) or lower the " +
                   "stage's engine.max_num_seqs (a Thinker or Talker reserves 256 MiB per sequence and layer)");
  }
  {
    std::lock_guard<std::mutex> hold(mappingsLock);
    mappings.emplace(data, bytes);
  }
  // V8 adds every ArrayBuffer's length to its count of external memory unless its backing store has the empty deleter
  // (BackingStore::PerIsolateAccountingLength), and N-API's external buffers always have a deleter of their own. Counted,
  // each 4 GiB slab moved that count by 4 GiB at once: a full memory-reducing mark-compact of the stage's heap (25-45 ms
  // on its one thread, the stage's steps stopped) right after, the next request's first packet behind it. The mapping is
  // no memory V8 could collect, so it is not counted: the store's deleter does nothing, and the ArrayBuffer object's
  // finalizer unmaps it (every view holds the object, so nothing reads the mapping after that).
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  std::unique_ptr<v8::BackingStore> store =
      v8::ArrayBuffer::NewBackingStore(data, bytes, v8::BackingStore::EmptyDeleter, nullptr);
  v8::Local<v8::ArrayBuffer> buffer = v8::ArrayBuffer::New(isolate, std::move(store));
  // N-API's values are V8's local handles (node's js_native_api_v8.h, JsValueFromV8LocalValue).
  napi_value result = reinterpret_cast<napi_value>(*buffer);
  napi_status status = napi_add_finalizer(env, result, data, Unmap, nullptr, nullptr);
  if (status != napi_ok) {
    Unmap(env, data, nullptr);
    throw Napi::Error::New(env);
  }
  return Napi::Value(env, result);
}

Napi::Value ReleasePages(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsArrayBuffer())
    ThrowInvalid(env, "releasePages(buffer: ArrayBuffer, byteOffset: number, byteLength: number)");
  size_t offset = IntegerArg(info, 1, "releasePages: byteOffset");
  size_t length = IntegerArg(info, 2, "releasePages: byteLength");
  void* data = info[0].As<Napi::ArrayBuffer>().Data();
  size_t bytes = 0;
  {
    std::lock_guard<std::mutex> hold(mappingsLock);
    auto it = mappings.find(data);
    if (it == mappings.end()) ThrowInvalid(env, "releasePages: the buffer is not from reserveMemory");
    bytes = it->second;
  }
  if (offset > bytes || length > bytes - offset)
    ThrowInvalid(env, "releasePages: byteOffset + byteLength runs past the buffer");
  // Whole pages only: a page partly outside the range keeps what it holds.
  size_t page = PageBytes();
  size_t start = (offset + page - 1) / page * page;
  size_t end = (offset + length) / page * page;
  if (start < end && madvise(static_cast<char*>(data) + start, end - start, MADV_DONTNEED) != 0)
    ThrowCoded(env, "CHORUS_ERR_INTERNAL", std::string("releasePages: madvise failed: ") + std::strerror(errno));
  return env.Undefined();
}

}  // namespace chorus
