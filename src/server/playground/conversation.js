// The conversation as the user lives it: both sides' turns in order (typed text, a committed voice turn as its
// transcript or "[speech 3.2 s]", the answer's text with its audio, status and timings), the context fill, and the
// answer's status in plain words.
import { $, state } from './page.js';
import { SAMPLE_RATE_HZ } from './pcm16.js';

/** Each turn's list entry, kept off the turn itself so that tests read state.turns as plain data. */
const elements = new WeakMap();

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** A turn's list entry: who, the text, and a line of details under it. */
function turnElement(turn) {
  const li = el('li', 'turn');
  li.dataset.role = turn.role;
  li.dataset.kind = turn.kind;
  if (turn.itemId) li.dataset.itemId = turn.itemId;
  li.append(el('div', 'who', turn.role === 'user' ? 'you' : 'assistant'), el('div', 'text'), el('div', 'meta'));
  $('transcript').append(li);
  elements.set(turn, li);
  return li;
}

function scrollToEnd() {
  const list = $('transcript');
  list.scrollTop = list.scrollHeight;
}

/** A user turn the server added to the conversation (conversation.item.added): typed, or the speech it committed. */
export function addUserTurn(item, speech) {
  if (state.turns.some((t) => t.itemId === item.id)) return; // announced twice (added, then done): shown once
  const parts = item.content || [];
  const audio = parts.find((c) => c.type === 'input_audio');
  const turn = { role: 'user', kind: audio ? 'speech' : 'text', itemId: item.id, text: '' };
  if (audio) {
    // The transcript when the server has one; otherwise how long the user spoke, from the VAD's own marks.
    const seconds = speech ? (speech.endMs - speech.startMs) / 1000 : null;
    turn.text = audio.transcript || `[speech${seconds === null ? '' : ` ${seconds.toFixed(1)} s`}]`;
    turn.speechMs = speech ? speech.endMs - speech.startMs : null;
  } else {
    const words = parts.filter((c) => c.type === 'input_text').map((c) => c.text || '');
    const images = parts.filter((c) => c.type === 'input_image').length;
    turn.text = [...words, ...(images > 0 ? [`[${images === 1 ? 'an image' : `${images} images`}]`] : [])].join(' ');
  }
  turnElement(turn).querySelector('.text').textContent = turn.text;
  state.turns.push(turn);
  scrollToEnd();
}

/** The answer's turn, opened when its response is created and filled as its text and audio arrive. */
export function addAnswerTurn(r) {
  const turn = { role: 'assistant', kind: 'answer', itemId: null, responseId: r.id, text: '', status: '' };
  turnElement(turn).dataset.responseId = r.id;
  r.turn = turn;
  state.turns.push(turn);
  updateAnswerTurn(r);
  scrollToEnd();
}

const FROM = { text: 'Send', voice: 'speech_stopped', commit: 'Send speech' };

/** One latency figure: the page's, from its stated point, and the server's beside it when the server gave one. */
function timing(name, pageMs, serverMs) {
  if (pageMs === null) return null;
  const server = serverMs === null || serverMs === undefined ? '' : ` (server ${serverMs.toFixed(1)} ms)`;
  return `${name} ${pageMs.toFixed(0)} ms${server}`;
}

export function updateAnswerTurn(r) {
  const turn = r.turn;
  if (!turn) return;
  turn.itemId = r.itemId;
  turn.text = r.text;
  turn.status = plainStatus(r);
  const li = elements.get(turn);
  if (r.itemId) li.dataset.itemId = r.itemId;
  li.querySelector('.text').textContent = r.text || (r.status === 'in_progress' ? '…' : '');
  const server = r.serverLatency || {};
  const parts = [
    turn.status,
    timing('TTFT', r.ttftMs, server.ttft_ms),
    timing('TTFP', r.ttfpMs, server.ttfp_ms),
    r.ttftMs !== null || r.ttfpMs !== null ? `from ${FROM[r.source] || r.source}` : null,
    r.audioSamples > 0 ? `audio ${(r.audioSamples / SAMPLE_RATE_HZ).toFixed(1)} s` : null,
    r.underruns > 0 ? `${r.underruns} underrun${r.underruns === 1 ? '' : 's'}` : null,
  ].filter(Boolean);
  const meta = li.querySelector('.meta');
  meta.textContent = parts.join(' · ');
  li.dataset.status = r.status;
}

/**
 * The answer's status in words. An answer the model did not end is "stopped at N tokens" (the cap it met; random
 * weights never end an answer, so every one would read "incomplete"), an interrupted one says why.
 */
export function plainStatus(r) {
  switch (r.status) {
    case 'in_progress':
      return r.cancelled ? 'stopping…' : 'answering…';
    case 'completed':
      return 'completed';
    case 'incomplete': {
      if (r.reason !== 'max_output_tokens') return `incomplete${r.reason ? ` (${r.reason})` : ''}`;
      const tokens = r.usage ? r.usage.output_token_details.text_tokens : r.maxOutputTokens;
      return `stopped at ${tokens} tokens (max output tokens)`;
    }
    case 'cancelled':
      return r.reason === 'turn_detected' ? 'interrupted: you spoke' : 'cancelled';
    case 'failed':
      return `failed: ${r.errorMessage || 'the server gave no reason'}`;
    case 'refused':
      return `refused: ${r.errorMessage || 'the server refused the request'}`;
    default:
      return r.status;
  }
}

/**
 * How full the Thinker's context is after an answer: the prompt's positions (text, audio and image) and the text
 * tokens it answered with, of the positions the Thinker has; and how much of the prompt the prefix cache held.
 */
export function showContext(usage) {
  if (!usage) return;
  const maxPositions = state.pipeline.thinkerPositions || null;
  const used = usage.input_tokens + usage.output_token_details.text_tokens;
  const cached = usage.input_token_details.cached_tokens || 0;
  state.context = { usedPositions: used, maxPositions, inputTokens: usage.input_tokens, cachedTokens: cached };
  const share = (n, of) => (of > 0 ? `${Math.round((100 * n) / of)}%` : '–');
  const fill = maxPositions
    ? `${used} of ${maxPositions} Thinker positions (${share(used, maxPositions)})`
    : `${used} positions`;
  $('contextText').textContent =
    `${fill}; ${cached} of ${usage.input_tokens} prompt tokens cached (${share(cached, usage.input_tokens)})`;
  $('context').value = maxPositions ? Math.min(1, used / maxPositions) : 0;
}

/**
 * An item the server forgot (conversation.item.deleted: dropped by session.truncation, or deleted on request): its
 * turn leaves the view, which shows what the model reads. False when no turn shows it.
 */
export function removeTurn(itemId) {
  const at = state.turns.findIndex((t) => t.itemId === itemId);
  if (at < 0) return false;
  elements.get(state.turns[at]).remove();
  state.turns.splice(at, 1);
  return true;
}

/** A new session: nothing said yet. */
export function clearConversation() {
  state.turns = [];
  state.context = null;
  $('transcript').textContent = '';
  $('contextText').textContent = '–';
  $('context').value = 0;
}
