// Strided block copies between Float32Arrays, for KV stores laid out position-major ([positions, batch, heads,
// headDim]): moving some rows of every position to other rows of another store is one strided copy a tensor, not one
// JS call a position (stages/models/AppendKvCache.ts).
#pragma once

#include <napi.h>

namespace chorus {

// copyStrided(dst, dstStart, dstStride, src, srcStart, srcStride, blockFloats, count): copies `count` blocks of
// `blockFloats` floats, block i from src[srcStart + i * srcStride] to dst[dstStart + i * dstStride].
Napi::Value CopyStrided(const Napi::CallbackInfo& info);
// fillStrided(dst, start, stride, blockFloats, count, value): sets `count` blocks of `blockFloats` floats to value.
Napi::Value FillStrided(const Napi::CallbackInfo& info);

}  // namespace chorus
