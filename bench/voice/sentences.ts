/**
 * What the voice bench's users say: short questions of 1.5-3 s as espeak-ng speaks them. No commas or other inner
 * pauses: a pause longer than silence_duration_ms would end the turn mid-sentence, and the bench would time a
 * different turn from the one it spoke.
 */
export const VOICE_SENTENCES: readonly string[] = [
  'What is the weather like by the sea today?',
  'Can you tell me a short story about a brave little fox?',
  'How long does it take to boil an egg?',
  'Which train goes to the city centre in the morning?',
  'Please remind me to call my sister tomorrow evening.',
  'What should I cook for dinner tonight?',
  'How far is the moon from the earth?',
  'Tell me something interesting about octopuses.',
  'Why is the sky blue during the day?',
  'What time does the library open on Saturday?',
  'Can you suggest a good book for a long flight?',
  'How do I say thank you in Japanese?',
  'What is the best way to learn to play the piano?',
  'Is it going to rain this weekend in the mountains?',
  'Read me the latest news about football.',
  'How many cups of flour go into a loaf of bread?',
];

/** `count` sentences, the list repeated as often as needed, starting at `offset` (warm-up takes another slice). */
export function voicePrompts(count: number, offset = 0): string[] {
  return Array.from({ length: count }, (_, i) => VOICE_SENTENCES[(offset + i) % VOICE_SENTENCES.length]);
}
