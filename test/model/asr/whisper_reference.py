"""Whisper's reference transcripts for test/model/asr/whisperReference.test.ts: faster-whisper (CTranslate2) on the
same model folder and the same 16 kHz samples, greedy, without timestamps, each clip on its own.

argv: MODEL_DIR (loaded before the job is read: the test speaks its clips and loads its own model meanwhile)
stdin: {"clips": PATH of the clips' float32 little-endian samples back to back, "lengths": [samples of each clip]}
stdout: [{"text": str, "tokens": [int, ...]}, ...]
"""
import json
import sys

import numpy as np
from faster_whisper import WhisperModel

model = WhisperModel(sys.argv[1], device="cpu", compute_type="float32", cpu_threads=1)
request = json.load(sys.stdin)
samples = np.fromfile(request["clips"], dtype="<f4")
out = []
start = 0
for length in request["lengths"]:
    clip = samples[start : start + length]
    start += length
    segments, _ = model.transcribe(
        clip,
        beam_size=1,
        temperature=0,
        without_timestamps=True,
        condition_on_previous_text=False,
        vad_filter=False,
    )
    segments = list(segments)
    out.append({"text": "".join(s.text for s in segments), "tokens": [t for s in segments for t in s.tokens]})
json.dump(out, sys.stdout)
