// Memory for KV stores outside V8's heap: an anonymous private mapping that reserves address space and commits
// each page on its first touch, handed to JS as one ArrayBuffer over the whole reservation, which
// stages/models/KvBufferPool.ts carves into regions. A store that grows views more of its region: nothing is copied or
// resized, and V8 counts the buffer's length once, when it is made (it never took a resizable buffer's growth back off
// its count, and it starts a mark-compact every 64 MB of that count's growth). Pages are given back to the kernel
// explicitly (releasePages), and the mapping is unmapped when its ArrayBuffer is collected.
#pragma once

#include <napi.h>

namespace chorus {

// reserveMemory(bytes): ArrayBuffer of `bytes` (rounded up to whole pages), every byte reading 0 until written.
Napi::Value ReserveMemory(const Napi::CallbackInfo& info);
// releasePages(buffer, byteOffset, byteLength): gives the pages wholly within the range back to the kernel; they read 0
// afterwards. Only for buffers from reserveMemory.
Napi::Value ReleasePages(const Napi::CallbackInfo& info);

}  // namespace chorus
