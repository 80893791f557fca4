"""Piper's own synthesis of each text, as the reference for the tts stage's (test/model/tts/piperReference.test.ts).

Reads {"model": path, "texts": [...], "noise_scale", "length_scale", "noise_w"} as JSON on stdin; writes, for each
text, its sentences' phoneme ids and audio (float32 little-endian, base64) as JSON on stdout. Audio as piper's
synthesize makes it with normalize_audio off: the model's output clipped to [-1, 1].
"""

import base64
import json
import sys

import numpy as np
from piper import PiperVoice, SynthesisConfig

request = json.load(sys.stdin)
voice = PiperVoice.load(request["model"])
config = SynthesisConfig(
    noise_scale=request["noise_scale"],
    length_scale=request["length_scale"],
    noise_w_scale=request["noise_w"],
    normalize_audio=False,
)
out = []
for text in request["texts"]:
    sentences = []
    for chunk in voice.synthesize(text, config):
        audio = np.asarray(chunk.audio_float_array, dtype="<f4")
        sentences.append(
            {"ids": [int(i) for i in chunk.phoneme_ids], "audio": base64.b64encode(audio.tobytes()).decode()}
        )
    out.append(sentences)
json.dump(out, sys.stdout)
