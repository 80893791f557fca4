/**
 * What the users of `chorus bench --voice --turns` say: for each conversation, a seeded order of short questions (the
 * single-turn bench's sentences and more of the same kind), so every turn of a conversation is a different sentence
 * as long as it has no more turns than there are sentences, and conversations differ from each other.
 *
 * Like the single-turn sentences, none has a comma or other inner pause: a pause longer than silence_duration_ms
 * would end the turn mid-sentence, and the bench would time a different turn from the one it spoke.
 */
import { VOICE_SENTENCES } from '../sentences.ts';

const MORE_SENTENCES: readonly string[] = [
  'What is a good name for a small grey cat?',
  'How do bees make honey in the summer?',
  'Which planet has the biggest rings?',
  'Can you recommend a film for a rainy afternoon?',
  'What should I pack for a week at the beach?',
  'How long should I let bread dough rise?',
  'Why do leaves turn red in the autumn?',
  'What is the tallest mountain in Europe?',
  'How do I fix a flat tyre on my bicycle?',
  'Tell me a joke about a penguin.',
  'What is the quickest way to the airport?',
  'How many legs does a spider have?',
  'Can you explain how a rainbow forms?',
  'What games can I play with two children?',
  'How warm is the sea in September?',
  'Which fruit has the most vitamin C?',
  'What does a lighthouse keeper do all day?',
  'How do I plant tomatoes on a balcony?',
  'Tell me about the oldest tree in the world.',
  'Why do cats purr when they are happy?',
  'What is the capital city of Canada?',
  'How can I sleep better at night?',
  'Please suggest a song for a long drive.',
  'How far can an owl see in the dark?',
  'What is the history of the bicycle?',
  'Can you help me plan a picnic for Sunday?',
  'How do submarines stay under the water?',
  'What makes thunder so loud?',
  'Which animals live at the bottom of the ocean?',
  'How do I make a paper boat?',
  'What is the longest river in Africa?',
  'Tell me a riddle about the moon.',
];

/** Every sentence a conversation may speak: the single-turn bench's first, then the rest. */
export const CONVERSATION_SENTENCES: readonly string[] = [...VOICE_SENTENCES, ...MORE_SENTENCES];

/** A small seeded generator (mulberry32): the same seed gives the same conversations on any machine. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * [conversation][turn] sentences: each conversation walks a seeded shuffle of CONVERSATION_SENTENCES (a fresh one
 * after every pass, never starting with the sentence the last pass ended on), so two turns in a row never repeat.
 * Conversation i is the same for any count above i.
 */
export function spokenConversations(conversations: number, turns: number, seed: number): string[][] {
  return Array.from({ length: conversations }, (_, c) => {
    const next = random(Math.imul(seed, 0x9e3779b1) + c);
    const out: string[] = [];
    while (out.length < turns) {
      const pass = [...CONVERSATION_SENTENCES];
      for (let i = pass.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1));
        [pass[i], pass[j]] = [pass[j], pass[i]];
      }
      if (pass[0] === out.at(-1)) pass.push(pass.shift()!);
      out.push(...pass.slice(0, turns - out.length));
    }
    return out;
  });
}
