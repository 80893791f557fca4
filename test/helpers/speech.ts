/** Real speech for voice tests: espeak-ng speaks a sentence as pcm16 mono at 24 kHz (shared with the voice bench). */
export { SPEECH_RATE_HZ, concatPcm, msOf, quiet, speak } from '../../bench/voice/speech.ts';
