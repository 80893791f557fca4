"""Piper's own implementation (the piper-tts package), timed on texts read from stdin (one JSON list of strings).

For each text: `whole_ms`, the time to synthesize the whole text into a WAV (what `piper -f out.wav` does: the
first audio a listener gets from whole-utterance synthesis), and `first_chunk_ms`, the time to the first chunk of
piper's own sentence iterator (`PiperVoice.synthesize`). The voice is loaded once, before any timing; one warm-up.
Usage: python3 bench/tts/piper_timing.py MODEL.onnx < texts.json  (prints one JSON object)
"""

import io
import json
import sys
import time
import wave

from piper import PiperVoice


def main() -> None:
    voice = PiperVoice.load(sys.argv[1])
    texts = json.load(sys.stdin)
    with wave.open(io.BytesIO(), "wb") as warm:
        voice.synthesize_wav(texts[0], warm)
    rows = []
    for text in texts:
        started = time.perf_counter()
        with wave.open(io.BytesIO(), "wb") as out:
            voice.synthesize_wav(text, out)
        whole_ms = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        first = next(iter(voice.synthesize(text)))
        first_chunk_ms = (time.perf_counter() - started) * 1000
        rows.append({"whole_ms": whole_ms, "first_chunk_ms": first_chunk_ms, "samples": len(first.audio_int16_bytes) // 2})
    json.dump({"rows": rows}, sys.stdout)


if __name__ == "__main__":
    main()
