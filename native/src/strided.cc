#include "strided.h"

#include <cmath>
#include <cstring>
#include <string>

#include "coded_error.h"

namespace chorus {
namespace {

struct Floats {
  float* data;
  size_t length;
};

Floats FloatsOf(Napi::Env env, Napi::Value v, const char* what) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array)
    ThrowInvalid(env, std::string(what) + " must be a Float32Array");
  Napi::Float32Array a = v.As<Napi::Float32Array>();
  return Floats{a.Data(), a.ElementLength()};
}

// Whether blocks start, start + stride, ... (count of them, block floats each) lie within length floats.
bool Fits(size_t start, size_t stride, size_t block, size_t count, size_t length) {
  if (count == 0 || block == 0) return true;
  if (stride != 0 && count - 1 > (SIZE_MAX - start - block) / stride) return false;
  return start + (count - 1) * stride + block <= length;
}

// Arguments index, index + 1, index + 2: a Float32Array, where its first block starts, how far apart blocks are.
struct Strided {
  Floats floats;
  size_t start;
  size_t stride;
};

Strided StridedOf(Napi::Env env, const Napi::CallbackInfo& info, size_t index, const char* what) {
  Floats floats = FloatsOf(env, info[index], what);
  std::string name(what);
  return Strided{floats, IntegerArg(info, index + 1, (name + "Start").c_str()),
                 IntegerArg(info, index + 2, (name + "Stride").c_str())};
}

// Refuses blocks that would run past the array, before anything is written.
void Check(Napi::Env env, const Strided& s, size_t block, size_t count, const char* fn, const char* what) {
  if (!Fits(s.start, s.stride, block, count, s.floats.length))
    ThrowInvalid(env, std::string(fn) + ": the blocks run past " + what);
}

}  // namespace

Napi::Value CopyStrided(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 8)
    ThrowInvalid(env, "copyStrided(dst, dstStart, dstStride, src, srcStart, srcStride, block, count)");
  Strided dst = StridedOf(env, info, 0, "dst");
  Strided src = StridedOf(env, info, 3, "src");
  size_t block = IntegerArg(info, 6, "blockFloats");
  size_t count = IntegerArg(info, 7, "count");
  Check(env, dst, block, count, "copyStrided", "dst");
  Check(env, src, block, count, "copyStrided", "src");
  for (size_t i = 0; i < count; i++)
    std::memmove(dst.floats.data + dst.start + i * dst.stride, src.floats.data + src.start + i * src.stride,
                 block * sizeof(float));
  return env.Undefined();
}

Napi::Value FillStrided(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 6) ThrowInvalid(env, "fillStrided(dst, start, stride, blockFloats, count, value)");
  Strided dst = StridedOf(env, info, 0, "dst");
  size_t block = IntegerArg(info, 3, "blockFloats");
  size_t count = IntegerArg(info, 4, "count");
  if (!info[5].IsNumber()) ThrowInvalid(env, "value must be a number");
  float value = static_cast<float>(info[5].As<Napi::Number>().DoubleValue());
  Check(env, dst, block, count, "fillStrided", "dst");
  for (size_t i = 0; i < count; i++) {
    float* at = dst.floats.data + dst.start + i * dst.stride;
    if (value == 0.0f && !std::signbit(value)) {
      std::memset(at, 0, block * sizeof(float));
    } else {
      for (size_t j = 0; j < block; j++) at[j] = value;
    }
  }
  return env.Undefined();
}

}  // namespace chorus
