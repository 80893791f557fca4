// Chorus playground: a conversation over one Realtime session at a time (both sides' turns in order, a new session
// on demand, the session's settings, the context fill); streaming text and gap-free audio playback, TTFT/TTFP per
// answer beside the server's; a microphone with server VAD turns and barge-in; a camera (a frame a second); image
// attach; the stage graph drawn
// as the DAG it is.
// Plain browser JavaScript as ES modules, no build step: index.html loads this one, which imports the rest from the
// same directory (the server serves each file of it). Server data is only ever inserted with textContent /
// setAttribute.
import { cancel, commitSpeech, newSession, send, showPreview } from './composer.js';
import { startCamera, stopCamera } from './camera.js';
import { startMic, stopMic, updateCommitButton } from './mic.js';
import { $, state } from './page.js';
import { Resampler } from './pcm16.js';
import { loadStages } from './pipeline.js';
import { onServerEvent } from './serverEvents.js';
import { applySettings, watchSettings } from './settings.js';
import { onSocket } from './socket.js';

// For tests: the page's state as data, and the resampler the microphone's worklet runs (test/browser/voice.test.ts
// feeds it tones in the page).
globalThis.chorusPlayground = state;
globalThis.Resampler = Resampler;

onSocket(applySettings, onServerEvent, () => {
  if (state.mic.on) stopMic('the connection closed');
  if (state.camera.on) stopCamera('the connection closed');
});
$('send').addEventListener('click', () => void send());
$('cancel').addEventListener('click', cancel);
$('newSession').addEventListener('click', () => void newSession());
$('mic').addEventListener('click', () => (state.mic.on ? stopMic() : void startMic()));
$('camera').addEventListener('click', () => (state.camera.on ? stopCamera() : void startCamera()));
$('commit').addEventListener('click', commitSpeech);
$('image').addEventListener('change', () => void showPreview());
watchSettings(updateCommitButton);
$('apiKey').addEventListener('change', () => {
  if (state.mic.on) stopMic('the API key changed');
  if (state.camera.on) stopCamera('the API key changed');
  if (state.ws) state.ws.close();
  state.ws = null;
  void loadStages();
});
void loadStages();
