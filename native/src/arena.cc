#include "arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "coded_error.h"

namespace chorus {
namespace {

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
  napi_value result;
  napi_status status = napi_create_external_arraybuffer(env, data, bytes, Unmap, nullptr, &result);
  if (status != napi_ok) {
    Unmap(env, data, nullptr);
    throw Napi::Error::New(env);  // what napi_create_external_arraybuffer threw (e.g. a length past Node's limit)
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
