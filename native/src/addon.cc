#include <napi.h>
// Placeholder module: replaced by the shared-memory ring implementation.
static Napi::Object Init(Napi::Env env, Napi::Object exports) { return exports; }
NODE_API_MODULE(chorus_shm, Init)
