/**
 * Editing a conversation through the official openai SDK, on a real pipeline: conversation.item.truncate (the
 * client played part of an answer's audio; the server trims the item's transcript to what that audio voiced, so the
 * next turn's context holds only that), conversation.item.retrieve and conversation.item.delete (a deleted turn is
 * gone from what the model reads next).
 */
import { describe, expect, it } from 'vitest';
import { sdkSession, tlsPipelineForFile, type Event } from '../helpers/realtimeSdk.ts';

const pipeline = tlsPipelineForFile('tiny-omni-text-in.yaml');

async function session() {
  const { rt, events, next: nextFrom } = await sdkSession(pipeline());
  /** The next matching event from now on. */
  const next = (match: (e: Event) => boolean) => nextFrom(match, events.length);
  /** One spoken answer to `text`; resolves with its response.done. */
  const ask = async (text: string, maxTokens: number) => {
    rt.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
    });
    const done = next((e) => e.type === 'response.done');
    rt.send({ type: 'response.create', response: { output_modalities: ['audio'], max_output_tokens: maxTokens } });
    return (await done).response as {
      status: string;
      output: { id: string; content: { transcript: string }[] }[];
      usage: { input_token_details: { text_tokens: number } };
    };
  };
  return { rt, events, next, ask };
}

type Item = { id: string; role: string };

describe('conversation.item.truncate', () => {
  it('trims the transcript to the audio played; the next turn sees only that', async () => {
    const [a, b] = await Promise.all([session(), session()]);
    const [first, same] = await Promise.all([a.ask('Tell me about the sea', 20), b.ask('Tell me about the sea', 20)]);
    expect(first.output[0].content[0].transcript).toBe(same.output[0].content[0].transcript); // greedy, same answer
    const itemId = first.output[0].id;

    // Past the end of the item's audio: refused, nothing changes.
    const refused = a.next((e) => e.type === 'error');
    a.rt.send({ type: 'conversation.item.truncate', item_id: itemId, content_index: 0, audio_end_ms: 600_000 });
    expect(((await refused).error as { param: string }).param).toBe('audio_end_ms');

    // The user heard 400 ms (5 codec frames of 80 ms: the first 3 tokens of 2 frames each).
    const truncated = a.next((e) => e.type === 'conversation.item.truncated');
    a.rt.send({ type: 'conversation.item.truncate', item_id: itemId, content_index: 0, audio_end_ms: 400 });
    expect(await truncated).toMatchObject({ item_id: itemId, content_index: 0, audio_end_ms: 400 });

    // Same next question in both sessions: the truncated history is shorter by the unheard tokens.
    const [after, untouched] = await Promise.all([a.ask('And then?', 4), b.ask('And then?', 4)]);
    const heard = after.usage.input_token_details.text_tokens;
    const whole = untouched.usage.input_token_details.text_tokens;
    expect(whole - heard).toBe(20 - 3);
    a.rt.close();
    b.rt.close();
  }, 90_000);

  it('retrieves a turn as the server holds it; a deleted turn is gone from what the model reads next', async () => {
    const [a, b] = await Promise.all([session(), session()]);
    const first = await a.ask('Tell me about the sea', 12);
    const answer = first.output[0];

    const retrieved = a.next((e) => e.type === 'conversation.item.retrieved');
    a.rt.send({ type: 'conversation.item.retrieve', item_id: answer.id });
    expect((await retrieved).item).toMatchObject({
      id: answer.id,
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_audio', transcript: answer.content[0].transcript }],
    });

    // Delete both items of the first turn: session a is then where session b starts, an empty conversation.
    const question = a.events.find((e) => e.type === 'conversation.item.added' && (e.item as Item).role === 'user');
    for (const id of [(question!.item as Item).id, answer.id]) {
      const deleted = a.next((e) => e.type === 'conversation.item.deleted');
      a.rt.send({ type: 'conversation.item.delete', item_id: id });
      expect((await deleted).item_id).toBe(id);
    }
    const [after, fresh] = await Promise.all([a.ask('And then?', 6), b.ask('And then?', 6)]);
    expect(after.usage.input_token_details.text_tokens).toBe(fresh.usage.input_token_details.text_tokens);
    expect(after.output[0].content[0].transcript).toBe(fresh.output[0].content[0].transcript); // greedy: the same

    const gone = a.next((e) => e.type === 'error');
    a.rt.send({ type: 'conversation.item.retrieve', item_id: answer.id });
    expect((await gone).error).toMatchObject({ code: 'CHORUS_ERR_NOT_FOUND', param: 'item_id' });
    a.rt.close();
    b.rt.close();
  }, 90_000);
});
