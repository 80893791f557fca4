"""
Random blocks of every ggml type Chorus converts, and their float32 values as the `gguf` package dequantizes them.
Block bytes are random except the f16 scales, set to finite values so every output is a number.

stdin: {"types": [name, ...], "blocks": N, "dir": PATH, "seed": S}
writes DIR/<type>.bin (raw blocks) and DIR/<type>.f32 (values); stdout: {"counts": {type: values}}
"""

import json
import sys

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
from gguf.quants import dequantize

# Byte offsets of the f16 scale fields inside one block (ggml-common.h).
F16_FIELDS = {
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
    "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
}


def main():
    job = json.load(sys.stdin)
    rng = np.random.default_rng(job["seed"])
    counts = {}
    for name in job["types"]:
        qtype = GGMLQuantizationType[name]
        block_size, type_size = GGML_QUANT_SIZES[qtype]
        n = job["blocks"]
        if name == "F16":
            raw = rng.normal(0, 2, n * block_size).astype(np.float16).view(np.uint8)
        elif name == "BF16":
            raw = (rng.normal(0, 2, n * block_size).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)
        else:
            raw = rng.integers(0, 256, (n, type_size), dtype=np.uint8)
            for at in F16_FIELDS[name]:
                raw[:, at : at + 2] = rng.normal(0, 0.05, n).astype(np.float16).view(np.uint8).reshape(n, 2)
        raw = np.ascontiguousarray(raw).reshape(-1)
        values = dequantize(raw.view(np.float16) if name == "F16" else raw.reshape(n, -1), qtype)
        raw.tofile(f"{job['dir']}/{name}.bin")
        np.asarray(values, dtype=np.float32).reshape(-1).tofile(f"{job['dir']}/{name}.f32")
        counts[name] = int(np.asarray(values).size)
    json.dump({"counts": counts}, sys.stdout)


if __name__ == "__main__":
    main()
