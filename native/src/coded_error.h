// A JS Error with a stable `code` (CHORUS_ERR_*, src/common/errors.ts), thrown from a native call.
#pragma once

#include <napi.h>

#include <string>

namespace chorus {

[[noreturn]] inline void ThrowCoded(Napi::Env env, const char* code, const std::string& message) {
  Napi::Error err = Napi::Error::New(env, message);
  err.Set("code", Napi::String::New(env, code));
  throw err;
}

}  // namespace chorus
