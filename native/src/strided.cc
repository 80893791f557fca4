#include "strided.h"

#include <cmath>
#include <cstring>
#include <string>

namespace chorus {
namespace {

struct Floats {
  float* data;
  size_t length;
};

[[noreturn]] void Invalid(Napi::Env env, const std::string& message) {
  Napi::Error err = Napi::TypeError::New(env, message);
  err.Set("code", Napi::String::New(env, "CHORUS_ERR_INTERNAL"));
  throw err;
}

Floats FloatsOf(Napi::Env env, Napi::Value v, const char* what) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array)
    Invalid(env, std::string(what) + " must be a Float32Array");
  Napi::Float32Array a = v.As<Napi::Float32Array>();
  return Floats{a.Data(), a.ElementLength()};
}

// A non-negative integer argument (a float count or index), exact in a double.
size_t Count(Napi::Env env, const Napi::CallbackInfo& info, size_t index, const char* what) {
  if (info.Length() <= index || !info[index].IsNumber()) Invalid(env, std::string(what) + " must be a number");
  double d = info[index].As<Napi::Number>().DoubleValue();
  if (!(d >= 0) || d > 9007199254740991.0 || std::floor(d) != d)
    Invalid(env, std::string(what) + " must be an integer >= 0");
  return static_cast<size_t>(d);
}

// Whether blocks start, start + stride, ... (count of them, block floats each) lie within length floats.
bool Fits(size_t start, size_t stride, size_t block, size_t count, size_t length) {
  if (count == 0 || block == 0) return true;
  if (stride != 0 && count - 1 > (SIZE_MAX - start - block) / stride) return false;
  return start + (count - 1) * stride + block <= length;
}

}  // namespace

Napi::Value CopyStrided(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 8) Invalid(env, "copyStrided(dst, dstStart, dstStride, src, srcStart, srcStride, block, count)");
  Floats dst = FloatsOf(env, info[0], "dst");
  size_t dstStart = Count(env, info, 1, "dstStart");
  size_t dstStride = Count(env, info, 2, "dstStride");
  Floats src = FloatsOf(env, info[3], "src");
  size_t srcStart = Count(env, info, 4, "srcStart");
  size_t srcStride = Count(env, info, 5, "srcStride");
  size_t block = Count(env, info, 6, "blockFloats");
  size_t count = Count(env, info, 7, "count");
  if (!Fits(dstStart, dstStride, block, count, dst.length)) Invalid(env, "copyStrided: the blocks run past dst");
  if (!Fits(srcStart, srcStride, block, count, src.length)) Invalid(env, "copyStrided: the blocks run past src");
  for (size_t i = 0; i < count; i++)
    std::memmove(dst.data + dstStart + i * dstStride, src.data + srcStart + i * srcStride, block * sizeof(float));
  return env.Undefined();
}

Napi::Value FillStrided(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 6) Invalid(env, "fillStrided(dst, start, stride, blockFloats, count, value)");
  Floats dst = FloatsOf(env, info[0], "dst");
  size_t start = Count(env, info, 1, "start");
  size_t stride = Count(env, info, 2, "stride");
  size_t block = Count(env, info, 3, "blockFloats");
  size_t count = Count(env, info, 4, "count");
  if (!info[5].IsNumber()) Invalid(env, "value must be a number");
  float value = static_cast<float>(info[5].As<Napi::Number>().DoubleValue());
  if (!Fits(start, stride, block, count, dst.length)) Invalid(env, "fillStrided: the blocks run past dst");
  for (size_t i = 0; i < count; i++) {
    float* at = dst.data + start + i * stride;
    if (value == 0.0f && !std::signbit(value)) {
      std::memset(at, 0, block * sizeof(float));
    } else {
      for (size_t j = 0; j < block; j++) at[j] = value;
    }
  }
  return env.Undefined();
}

}  // namespace chorus
