"""
An independent byte-level BPE over a GGUF's own vocabulary and merges (read with the `gguf` package), splitting text
as llama.cpp does for tokenizer.ggml.pre "smollm": control tokens matched literally, then every digit on its own,
then GPT-2's regex; then bytes -> GPT-2's printable characters and merges by rank.

stdin: {"gguf": PATH, "texts": [str, ...]}   stdout: {"ids": [[int, ...], ...]}
"""

import json
import sys

import regex
from gguf import GGUFReader

GPT2_SPLIT = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
DIGIT = regex.compile(r"(\p{N})")
CONTROL = 3


def byte_chars():
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


class Bpe:
    def __init__(self, path):
        r = GGUFReader(path)
        if r.fields["tokenizer.ggml.pre"].contents() != "smollm":
            raise SystemExit("bpe.py implements the smollm pre-tokenizer only")
        tokens = r.fields["tokenizer.ggml.tokens"].contents()
        types = r.fields["tokenizer.ggml.token_type"].contents()
        self.ids = {t: i for i, t in enumerate(tokens)}
        self.ranks = {tuple(m.split(" ")): i for i, m in enumerate(r.fields["tokenizer.ggml.merges"].contents())}
        control = sorted((t for t, k in zip(tokens, types) if k == CONTROL), key=len, reverse=True)
        self.control = regex.compile("(" + "|".join(regex.escape(t) for t in control) + ")")
        self.chars = byte_chars()

    def word(self, piece):
        symbols = [self.chars[b] for b in piece.encode("utf-8")]
        while len(symbols) > 1:
            rank, i = min((self.ranks.get(pair, float("inf")), i) for i, pair in enumerate(zip(symbols, symbols[1:])))
            if rank == float("inf"):
                break
            symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]
        return [self.ids[s] for s in symbols]

    def encode(self, text):
        ids = []
        for part in self.control.split(text):
            if part in self.ids and self.control.fullmatch(part):
                ids.append(self.ids[part])
                continue
            for chunk in DIGIT.split(part):
                for piece in GPT2_SPLIT.findall(chunk):
                    ids.extend(self.word(piece))
        return ids


def main():
    job = json.load(sys.stdin)
    bpe = Bpe(job["gguf"])
    json.dump({"ids": [bpe.encode(t) for t in job["texts"]]}, sys.stdout)


if __name__ == "__main__":
    main()
