// The microphone: getUserMedia -> AudioWorklet (resampled to 24 kHz pcm16) -> input_audio_buffer.append.
import { MIC_CHUNK_MS, MIC_PROCESSOR, pcmToBase64 } from './pcm16.js';
import { startDevice, stopTracks } from './device.js';
import { $, logLine, setPressed, setVoice, state } from './page.js';
import { ensureAudio } from './playback.js';
import { updateInputControls } from './pipeline.js';
import { applySettings, vadOn } from './settings.js';
import { sendEvent } from './socket.js';

/** The AudioWorklet module, served beside this one. */
const MIC_WORKLET_URL = new URL('./micWorklet.js', import.meta.url).href;
let micNodes = null; // {stream, source, node, sink}: kept off `state` so tests can read state as data

/** With server VAD off the page commits turns itself: the Send speech button, shown while the mic is on. */
export function updateCommitButton() {
  $('commit').hidden = !(state.mic.on && !vadOn());
}

function onMicChunk(pcm, rms) {
  if (!state.mic.on) return;
  state.mic.level = rms;
  // The meter in dBFS over a 60 dB range: quiet room near 0, speech around the middle, clipping at the top.
  const db = 20 * Math.log10(Math.max(rms, 1e-6));
  $('level').value = Math.max(0, Math.min(1, (db + 60) / 60));
  if (sendEvent({ type: 'input_audio_buffer.append', audio: pcmToBase64(pcm) })) {
    state.mic.chunksSent++;
    state.mic.msSent += MIC_CHUNK_MS;
  }
}

export async function startMic() {
  const ctx = ensureAudio(); // inside the click, so autoplay policies let it run
  await startDevice({
    device: 'mic',
    name: 'microphone',
    // Echo cancellation keeps the answer coming out of the speakers from being heard as the user (barge-in).
    constraints: { audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true } },
    held: () => micNodes !== null,
    wire: (stream, button) => wireMic(ctx, stream, button),
  });
}

/** The mic's audio graph: its stream -> the worklet (mono, 24 kHz pcm16 chunks) -> onMicChunk. */
async function wireMic(ctx, stream, button) {
  if (!state.micModuleLoaded) {
    await ctx.audioWorklet.addModule(MIC_WORKLET_URL);
    state.micModuleLoaded = true;
  }
  const source = ctx.createMediaStreamSource(stream);
  const node = new AudioWorkletNode(ctx, MIC_PROCESSOR, {
    numberOfInputs: 1,
    numberOfOutputs: 1,
    channelCount: 1,
    channelCountMode: 'explicit', // the graph downmixes to mono before the processor sees it
  });
  // A node nothing pulls may never be processed: route it to the speakers through a muted gain.
  const sink = ctx.createGain();
  sink.gain.value = 0;
  node.connect(sink).connect(ctx.destination);
  node.port.onmessage = (m) => onMicChunk(m.data.pcm, m.data.rms);
  micNodes = { stream, source, node, sink };
  state.mic.on = true;
  // Turn detection on (the settings panel's VAD) before the first append, so the VAD hears the turn from its start.
  applySettings();
  source.connect(node);
  updateCommitButton();
  setPressed(button, true, 'Stop mic');
  setVoice('listening');
  logLine('mic', vadOn() ? 'on (server_vad)' : 'on (turns sent with Send speech)');
}

export function stopMic(why) {
  if (micNodes) {
    micNodes.node.port.onmessage = null;
    micNodes.source.disconnect();
    micNodes.node.disconnect();
    micNodes.sink.disconnect();
    stopTracks(micNodes.stream);
    micNodes = null;
  }
  const wasOn = state.mic.on;
  state.mic.on = false;
  if (wasOn) {
    // Turn detection off, and the half-spoken turn (if any) dropped rather than committed later.
    applySettings();
    sendEvent({ type: 'input_audio_buffer.clear' });
  }
  updateCommitButton();
  state.mic.level = 0;
  $('level').value = 0;
  const button = $('mic');
  setPressed(button, false, 'Start mic');
  setVoice('off');
  logLine('mic', why ? `off: ${why}` : 'off');
  updateInputControls();
}
