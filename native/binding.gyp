{
  "targets": [
    {
      "target_name": "chorus_shm",
      "sources": ["src/addon.cc", "src/ring.cc", "src/waiter.cc", "src/bell.cc", "src/strided.cc", "src/arena.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "cflags_cc": ["-std=c++17", "-O2", "-fexceptions", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "cflags_cc!": ["-fno-exceptions"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"],
      "libraries": ["-lrt"]
    }
  ]
}
