// Chorus playground: one realtime session; streaming text and gap-free audio playback, TTFT/TTFP per response; a
// microphone with server VAD turns and barge-in; image attach; the stage graph drawn as the DAG it is.
// Plain browser JavaScript as ES modules, no build step: index.html loads this one, which imports the rest from the
// same directory (the server serves each file of it). Server data is only ever inserted with textContent /
// setAttribute.
import { cancel, onSessionControlsChanged, send, showPreview } from './composer.js';
import { startMic, stopMic } from './mic.js';
import { $, state } from './page.js';
import { Resampler } from './pcm16.js';
import { loadStages } from './pipeline.js';
import { onServerEvent } from './serverEvents.js';
import { onSocket } from './socket.js';

// For tests: the page's state as data, and the resampler the microphone's worklet runs (test/browser/voice.test.ts
// feeds it tones in the page).
globalThis.chorusPlayground = state;
globalThis.Resampler = Resampler;

onSocket(onServerEvent, () => {
  if (state.mic.on) stopMic('the connection closed');
});
$('send').addEventListener('click', () => void send());
$('cancel').addEventListener('click', cancel);
$('mic').addEventListener('click', () => (state.mic.on ? stopMic() : void startMic()));
$('image').addEventListener('change', () => void showPreview());
$('maxTokens').addEventListener('change', onSessionControlsChanged);
$('audio').addEventListener('change', onSessionControlsChanged);
$('apiKey').addEventListener('change', () => {
  if (state.mic.on) stopMic('the API key changed');
  if (state.ws) state.ws.close();
  state.ws = null;
  void loadStages();
});
void loadStages();
