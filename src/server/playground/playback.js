// Playback, and barge-in on the client side.
import { base64ToBytes, SAMPLE_RATE_HZ } from './pcm16.js';
import { logLine, setSpeaking, setVoice, state } from './page.js';
import { row } from './responses.js';
import { sendEvent } from './socket.js';

const START_LEAD_S = 0.05; // first buffer starts a little ahead so it is not scheduled in the past

export function ensureAudio() {
  if (!state.audioContext) state.audioContext = new AudioContext();
  if (state.audioContext.state === 'suspended') void state.audioContext.resume();
  return state.audioContext;
}

/** Schedules one pcm16 chunk right where the previous one ends, so playback has no gaps. */
export function playChunk(base64, r) {
  const ctx = ensureAudio();
  if (state.playing !== r) {
    stopAudio(); // another response's audio: a new answer replaces what is left of the old one
    state.playing = r;
  }
  const bytes = base64ToBytes(base64);
  const view = new DataView(bytes.buffer);
  const samples = new Float32Array(bytes.length >> 1);
  for (let i = 0; i < samples.length; i++) samples[i] = view.getInt16(i * 2, true) / 32768;
  const buffer = ctx.createBuffer(1, samples.length, SAMPLE_RATE_HZ);
  buffer.copyToChannel(samples, 0);
  const source = ctx.createBufferSource();
  source.buffer = buffer;
  source.connect(ctx.destination);
  // Fell behind (the network was slower than playback): restart just ahead of now and count the underrun.
  if (state.nextStartTime < ctx.currentTime) {
    if (r.schedule.length > 0) {
      r.underruns++;
      r.underrunsAtMs.push(performance.timeOrigin + performance.now()); // epoch ms: the waterfall's clock
    }
    state.nextStartTime = ctx.currentTime + START_LEAD_S;
  }
  source.start(state.nextStartTime);
  r.schedule.push({
    start: state.nextStartTime,
    duration: buffer.duration,
    samples: samples.length,
    first: samples[0],
  });
  state.nextStartTime += buffer.duration;
  state.sources.add(source);
  source.onended = () => {
    state.sources.delete(source);
    if (state.sources.size === 0) setSpeaking(false); // the last buffer scheduled has played out
  };
  if (!state.speaking) setSpeaking(true);
  r.audioSamples += samples.length;
}

export function stopAudio() {
  for (const s of state.sources) {
    s.onended = null;
    s.stop();
  }
  state.sources.clear();
  state.nextStartTime = 0;
  if (state.speaking) setSpeaking(false);
}

/** True while scheduled audio has not finished playing. */
function audioPlaying() {
  const ctx = state.audioContext;
  return ctx !== null && state.sources.size > 0 && state.nextStartTime > ctx.currentTime;
}

/**
 * Seconds of `r`'s audio the listener has heard: the context time now at the speakers (output latency taken
 * off when the browser reports it) laid over the buffers as scheduled, so gaps from underruns do not count.
 */
function heardSeconds(r) {
  const ctx = state.audioContext;
  const stamp = typeof ctx.getOutputTimestamp === 'function' ? ctx.getOutputTimestamp() : null;
  const now = stamp && stamp.contextTime > 0 ? stamp.contextTime : ctx.currentTime;
  let heard = 0;
  for (const s of r.schedule) heard += Math.max(0, Math.min(s.duration, now - s.start));
  return heard;
}

/**
 * The user spoke. If an answer is playing, it stops at once, and the server learns how much of it was heard
 * (conversation.item.truncate), so the next turn's context holds only what the user heard. The server cancels the
 * response itself when it is still generating (interrupt_response); this covers audio already received too.
 */
export function onSpeechStarted(e) {
  setVoice('speaking');
  logLine(e.type, `at ${e.audio_start_ms} ms`);
  const r = state.playing;
  if (!r || r.interrupted || !audioPlaying()) return;
  const playedMs = Math.floor(heardSeconds(r) * 1000);
  stopAudio();
  r.cancelled = true;
  r.interrupted = true;
  r.playedMs = playedMs;
  row(r);
  if (
    r.itemId &&
    sendEvent({ type: 'conversation.item.truncate', item_id: r.itemId, content_index: 0, audio_end_ms: playedMs })
  ) {
    state.truncations.push({ itemId: r.itemId, responseId: r.id, audioEndMs: playedMs, answered: false });
    logLine('conversation.item.truncate', `${r.itemId} at ${playedMs} ms (sent)`);
  }
}
