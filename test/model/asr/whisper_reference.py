"""Whisper's reference transcripts for test/model/asr/whisperReference.test.ts: faster-whisper (CTranslate2) on the
same model folder and the same 16 kHz samples, greedy, without timestamps, each clip on its own.

stdin: {"model": DIR, "clips": [base64 of float32 little-endian samples, ...]}
stdout: [{"text": str, "tokens": [int, ...]}, ...]
"""
import base64
import json
import sys

import numpy as np
from faster_whisper import WhisperModel

request = json.load(sys.stdin)
model = WhisperModel(request["model"], device="cpu", compute_type="float32", cpu_threads=1)
out = []
for clip in request["clips"]:
    samples = np.frombuffer(base64.b64decode(clip), dtype="<f4")
    segments, _ = model.transcribe(
        samples,
        beam_size=1,
        temperature=0,
        without_timestamps=True,
        condition_on_previous_text=False,
        vad_filter=False,
    )
    segments = list(segments)
    out.append({"text": "".join(s.text for s in segments), "tokens": [t for s in segments for t in s.tokens]})
json.dump(out, sys.stdout)
