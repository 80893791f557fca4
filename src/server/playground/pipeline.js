// The pipeline the server runs: /v1/stages loaded and drawn, and the input controls (microphone, camera, image
// attach) it allows.
import { $, authHeaders, state } from './page.js';
import { drawGraph } from './stageGraph.js';

export async function loadStages() {
  const box = $('stages');
  try {
    const res = await fetch('/v1/stages', { headers: authHeaders() });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const graph = await res.json();
    box.textContent = '';
    box.append(drawGraph(graph));
    $('graphMode').textContent = graph.async_chunk ? 'async_chunk on' : 'async_chunk off';
    const encoders = graph.stages.filter((s) => s.kind === 'encoder');
    const thinker = graph.stages.find((s) => s.kind === 'thinker');
    state.pipeline = {
      loaded: true,
      // An audio encoder, or speech-to-text for a Thinker that reads text (the transcript is the turn).
      audioInput: encoders.some((s) => s.modality === 'audio') || graph.speech_to_text === true,
      imageInput: encoders.some((s) => s.modality === 'image'),
      // The context the conversation fills (null for a file model: the page then shows positions used only).
      thinkerPositions: (thinker && thinker.model && thinker.model.max_positions) || null,
    };
  } catch (err) {
    box.textContent = `could not load the stage graph: ${err.message}`;
    state.pipeline = { loaded: false, audioInput: false, imageInput: false, thinkerPositions: null };
  }
  updateInputControls();
}

/** The microphone and image attach exist only for pipelines that can take them; a disabled control says why. */
export function updateInputControls() {
  const p = state.pipeline;
  let micBlocked = null;
  if (!p.loaded) micBlocked = 'the stage graph did not load (check the API key)';
  else if (!p.audioInput) micBlocked = 'this pipeline has no audio encoder or speech-to-text, so it cannot take speech';
  else if (!window.isSecureContext || !navigator.mediaDevices || !window.AudioWorkletNode)
    micBlocked = 'the microphone needs a secure context: open the page over https or from localhost';
  const mic = $('mic');
  if (!state.mic.on) mic.disabled = micBlocked !== null;
  const micTitle = micBlocked ? `Microphone unavailable: ${micBlocked}` : 'Talk: server VAD finds your turns';
  $('micWrap').title = micTitle; // on the wrapper too: a disabled button shows no tooltip in some browsers
  mic.title = micTitle;
  $('micNote').textContent = micBlocked && p.loaded ? `mic off: ${micBlocked}` : '';

  const camera = $('camera');
  const cameraBlocked = !p.imageInput
    ? 'this pipeline has no image encoder, so it cannot take camera frames'
    : !window.isSecureContext || !navigator.mediaDevices
      ? 'the camera needs a secure context: open the page over https or from localhost'
      : null;
  if (!state.camera.on) camera.disabled = cameraBlocked !== null;
  camera.title = cameraBlocked
    ? `Camera unavailable: ${cameraBlocked}`
    : 'Show the assistant what your camera sees: a frame a second';

  const image = $('image');
  image.disabled = !p.imageInput;
  image.title = p.imageInput
    ? 'attach a PNG or JPEG to the next message'
    : 'this pipeline has no image encoder, so it cannot take images';
  $('imageLabel').title = image.title;
}
