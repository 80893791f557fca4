"""
An independent reference for the GGUF -> ONNX conversion: a llama / qwen2 decoder in numpy (float32, RoPE angles in float64) over the `gguf`
package's own reader and dequantization, computed the way llama.cpp computes it from the file as stored. In
particular RoPE rotates the pairs the file's Q/K rows are laid out in (adjacent pairs for llama, whose rows
llama.cpp's converter permuted; halves for qwen2), so it shares nothing with the converter's row restoration.

argv: GGUF_PATH (the file is read and dequantized before the job is read: the test tokenizes its prompts meanwhile)
stdin: {"prompts": [[ids...], ...], "steps": N, "out": PATH}
stdout: {"tokens": [[greedy ids...], ...], "vocab": V}
out: float32 logits [prompt][step 0..N-1][V] (step 0: after the prompt; step i: after greedy token i-1 was fed).

The prompts are decoded side by side: each step feeds every prompt's token through the projections at once (the
weights, ~0.5 GB as float32, read once a step rather than once a prompt); attention is each prompt's own.
"""

import json
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize


class Model:
    def __init__(self, path):
        r = GGUFReader(path)
        self.arch = r.fields["general.architecture"].contents()
        if self.arch not in ("llama", "qwen2"):
            raise SystemExit(f"reference: architecture {self.arch} not implemented")

        def meta(key, default=None):
            field = r.fields.get(f"{self.arch}.{key}")
            return default if field is None else field.contents()

        self.n_layer = meta("block_count")
        self.n_head = meta("attention.head_count")
        self.n_kv = meta("attention.head_count_kv", self.n_head)
        self.d = meta("embedding_length")
        self.hd = self.d // self.n_head
        self.eps = meta("attention.layer_norm_rms_epsilon")
        self.base = meta("rope.freq_base", 10000.0)
        scaling = meta("rope.scaling.type", "none")
        self.pos_scale = 1.0 / meta("rope.scaling.factor", 1.0) if scaling == "linear" else 1.0
        self.w = {}
        for t in r.tensors:
            shape = tuple(int(x) for x in reversed(t.shape))
            self.w[t.name] = dequantize(t.data, t.tensor_type).reshape(shape).astype(np.float32, copy=False)
        self.head = self.w.get("output.weight", self.w["token_embd.weight"])

    def rms(self, x, name):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * self.w[name]

    def rope(self, x, pos):
        # x [S, heads, hd]; llama.cpp rope mode 0 (llama) rotates (2i, 2i+1), NeoX mode (qwen2) rotates (i, i + hd/2).
        half = self.hd // 2
        theta = (pos[:, None] * self.pos_scale) * self.base ** (-2.0 * np.arange(half) / self.hd)  # [S, half]
        cos = np.cos(theta).astype(np.float32)[:, None, :]
        sin = np.sin(theta).astype(np.float32)[:, None, :]
        if self.arch == "llama":
            a, b = x[..., 0::2], x[..., 1::2]
        else:
            a, b = x[..., :half], x[..., half:]
        ra, rb = a * cos - b * sin, a * sin + b * cos
        out = np.empty_like(x)
        if self.arch == "llama":
            out[..., 0::2], out[..., 1::2] = ra, rb
        else:
            out[..., :half], out[..., half:] = ra, rb
        return out

    def linear(self, x, name):
        y = x @ self.w[name + ".weight"].T
        bias = self.w.get(name + ".bias")
        return y if bias is None else y + bias

    def attend(self, q, k, v, start):
        """q [S, n_head, hd] of positions start.. over one sequence's cache k, v [T, n_kv, hd]; grouped heads."""
        group = self.n_head // self.n_kv
        s, t = len(q), len(k)
        causal = np.arange(t)[None, :] <= (start + np.arange(s))[:, None]  # [S, T]
        qg = q.reshape(s, self.n_kv, group, self.hd).transpose(1, 2, 0, 3)  # [kv, group, S, hd]; head = kv*group + g
        scores = qg @ k.transpose(1, 2, 0)[:, None] / np.float32(np.sqrt(self.hd))  # [kv, group, S, T]
        scores = np.where(causal, scores, -np.inf)
        probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        out = probs @ v.transpose(1, 0, 2)[:, None]  # [kv, group, S, hd]
        return out.transpose(2, 0, 1, 3).reshape(s, self.n_head, self.hd)

    def forward(self, seqs, caches):
        """seqs: each sequence's new tokens; caches: each one's per layer [K, V] of [T, n_kv, hd].
        Returns each sequence's last position's logits [B, V]."""
        starts = [cache[0][0].shape[0] for cache in caches]
        bounds = np.cumsum([0] + [len(ids) for ids in seqs])
        pos = np.concatenate([np.arange(s, s + len(ids), dtype=np.float64) for s, ids in zip(starts, seqs)])
        x = self.w["token_embd.weight"][np.concatenate(seqs)]
        for l in range(self.n_layer):
            p = f"blk.{l}"
            h = self.rms(x, f"{p}.attn_norm.weight")
            q = self.rope(self.linear(h, f"{p}.attn_q").reshape(len(x), self.n_head, self.hd), pos)
            k = self.rope(self.linear(h, f"{p}.attn_k").reshape(len(x), self.n_kv, self.hd), pos)
            v = self.linear(h, f"{p}.attn_v").reshape(len(x), self.n_kv, self.hd)
            out = np.empty_like(q)
            for b, cache in enumerate(caches):
                rows = slice(bounds[b], bounds[b + 1])
                cache[l][0] = np.concatenate([cache[l][0], k[rows]])
                cache[l][1] = np.concatenate([cache[l][1], v[rows]])
                out[rows] = self.attend(q[rows], cache[l][0], cache[l][1], starts[b])
            x = x + self.linear(out.reshape(len(x), -1), f"{p}.attn_output")
            h = self.rms(x, f"{p}.ffn_norm.weight")
            gate = self.linear(h, f"{p}.ffn_gate")
            x = x + self.linear(gate / (1 + np.exp(-gate)) * self.linear(h, f"{p}.ffn_up"), f"{p}.ffn_down")
        return self.rms(x[bounds[1:] - 1], "output_norm.weight") @ self.head.T


def main():
    model = Model(sys.argv[1])
    job = json.load(sys.stdin)
    steps = job["steps"]
    empty = np.zeros((0, model.n_kv, model.hd), dtype=np.float32)
    caches = [[[empty, empty] for _ in range(model.n_layer)] for _ in job["prompts"]]
    rows = model.forward([np.array(prompt) for prompt in job["prompts"]], caches)
    logits = np.empty((len(caches), steps, rows.shape[1]), dtype=np.float32)
    tokens = [[] for _ in caches]
    for step in range(steps):
        logits[:, step] = rows
        picks = [int(i) for i in np.argmax(rows, axis=-1)]
        for greedy, pick in zip(tokens, picks):
            greedy.append(pick)
        if step + 1 < steps:
            rows = model.forward([np.array([pick]) for pick in picks], caches)
    logits.tofile(job["out"])
    json.dump({"tokens": tokens, "vocab": int(model.head.shape[0])}, sys.stdout)


if __name__ == "__main__":
    main()
