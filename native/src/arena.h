// Memory for KV stores outside V8's heap: an anonymous private mapping that reserves address space and commits
// each page on its first touch, handed to JS as one ArrayBuffer over the whole reservation, which
// stages/models/KvBufferPool.ts carves into regions. A store that grows views more of its region: nothing is copied or
// resized. V8 does not count the buffer as external memory (its backing store's deleter does nothing), so making one
// starts no collection: V8 runs a mark-compact each time that count grows by 64 MB, a memory-reducing one when it
// jumps by gigabytes. Pages are given back to the kernel explicitly (releasePages), and the mapping is unmapped when
// its ArrayBuffer is collected (a finalizer on the object).
#pragma once

#include <napi.h>

namespace chorus {

// reserveMemory(bytes): ArrayBuffer of `bytes` (rounded up to whole pages, at most 4 GiB), every byte reading 0 until
// written.
Napi::Value ReserveMemory(const Napi::CallbackInfo& info);
// releasePages(buffer, byteOffset, byteLength): gives the pages wholly within the range back to the kernel; they read 0
// afterwards. Only for buffers from reserveMemory.
Napi::Value ReleasePages(const Napi::CallbackInfo& info);

}  // namespace chorus
