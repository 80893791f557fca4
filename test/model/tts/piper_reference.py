"""Piper's own synthesis of each text, as the reference for the tts stage's (test/model/tts/piperReference.test.ts).

argv: MODEL_PATH. stdin: {"texts": [...], "noise_scale", "length_scale", "noise_w", "out": PATH} as JSON.
stdout: for each text, its sentences' phoneme ids and sample counts as JSON; out: their audio (float32
little-endian), sentence after sentence, text after text. Audio as piper's synthesize makes it with normalize_audio
off: the model's output clipped to [-1, 1].
"""

import json
import sys

import numpy as np
from piper import PiperVoice, SynthesisConfig

voice = PiperVoice.load(sys.argv[1])
request = json.load(sys.stdin)
config = SynthesisConfig(
    noise_scale=request["noise_scale"],
    length_scale=request["length_scale"],
    noise_w_scale=request["noise_w"],
    normalize_audio=False,
)
out = []
with open(request["out"], "wb") as audio_file:
    for text in request["texts"]:
        sentences = []
        for chunk in voice.synthesize(text, config):
            audio = np.asarray(chunk.audio_float_array, dtype="<f4")
            audio_file.write(audio.tobytes())
            sentences.append({"ids": [int(i) for i in chunk.phoneme_ids], "samples": int(audio.size)})
        out.append(sentences)
json.dump(out, sys.stdout)
