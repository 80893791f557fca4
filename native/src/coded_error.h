// JS errors with a stable `code` (CHORUS_ERR_*, src/common/errors.ts) thrown from a native call, and the check of a
// non-negative integer argument every entry point that takes a count, an index or a byte length shares.
#pragma once

#include <napi.h>

#include <cmath>
#include <string>

namespace chorus {

[[noreturn]] inline void ThrowCoded(Napi::Env env, const char* code, const std::string& message) {
  Napi::Error err = Napi::Error::New(env, message);
  err.Set("code", Napi::String::New(env, code));
  throw err;
}

// A caller's mistake (wrong type or range of an argument): a TypeError, CHORUS_ERR_INTERNAL.
[[noreturn]] inline void ThrowInvalid(Napi::Env env, const std::string& message) {
  Napi::Error err = Napi::TypeError::New(env, message);
  err.Set("code", Napi::String::New(env, "CHORUS_ERR_INTERNAL"));
  throw err;
}

// Argument `index` as an integer >= `min`, exact in a double; `what` names it in the error.
inline size_t IntegerArg(const Napi::CallbackInfo& info, size_t index, const char* what, size_t min = 0) {
  Napi::Env env = info.Env();
  if (info.Length() <= index || !info[index].IsNumber()) ThrowInvalid(env, std::string(what) + " must be a number");
  double d = info[index].As<Napi::Number>().DoubleValue();
  if (!(d >= static_cast<double>(min)) || d > 9007199254740991.0 || std::floor(d) != d)
    ThrowInvalid(env, std::string(what) + " must be an integer >= " + std::to_string(min));
  return static_cast<size_t>(d);
}

}  // namespace chorus
