// The camera: getUserMedia video -> one JPEG frame a second (drawn on a canvas) -> conversation.item.create, a user
// message of one input_image, which the server treats as a camera frame (docs/video.md#camera-frames-in-a-conversation:
// near-duplicates skipped, a window of recent frames kept, each frame prefilled as it arrives). Frames are not turns:
// the transcript leaves them out and the camera line counts the frames the conversation holds.
import { startDevice, stopTracks } from './device.js';
import { $, logLine, setPressed, state } from './page.js';
import { updateInputControls } from './pipeline.js';
import { sendEvent } from './socket.js';

/** One frame a second, at most this wide (the image encoder shrinks frames to 224 x 224 anyway). */
export const FRAME_EVERY_MS = 1000;
const FRAME_MAX_WIDTH = 320;
const FRAME_JPEG_QUALITY = 0.8;
/** Item ids of the page's frames start with this: the transcript and the counter tell them by it. */
export const FRAME_ID_PREFIX = 'cam_';

let camera = null; // {stream, video, canvas, timer}: kept off `state` so tests can read state as data

export function isFrameItem(itemId) {
  return typeof itemId === 'string' && itemId.startsWith(FRAME_ID_PREFIX);
}

/** The server added or deleted one of the page's frames (kept, skipped as a near-duplicate, or out of the window). */
export function onFrameItem(itemId, added) {
  const held = state.camera.inConversation;
  if (added && !held.includes(itemId)) held.push(itemId);
  if (!added) state.camera.inConversation = held.filter((id) => id !== itemId);
  showCameraState();
}

function showCameraState() {
  const c = state.camera;
  $('cameraState').textContent = c.on
    ? `camera on: ${c.framesSent} frames sent, ${c.inConversation.length} in the conversation`
    : c.inConversation.length > 0
      ? `camera off: ${c.inConversation.length} frames in the conversation`
      : 'camera off';
}

function sendFrame() {
  const { video, canvas } = camera;
  if (video.videoWidth === 0) return; // no picture yet
  const scale = Math.min(1, FRAME_MAX_WIDTH / video.videoWidth);
  canvas.width = Math.round(video.videoWidth * scale);
  canvas.height = Math.round(video.videoHeight * scale);
  canvas.getContext('2d').drawImage(video, 0, 0, canvas.width, canvas.height);
  const imageUrl = canvas.toDataURL('image/jpeg', FRAME_JPEG_QUALITY);
  const id = `${FRAME_ID_PREFIX}${Date.now().toString(36)}_${state.camera.framesSent}`;
  const sent = sendEvent({
    type: 'conversation.item.create',
    item: { id, type: 'message', role: 'user', content: [{ type: 'input_image', image_url: imageUrl }] },
  });
  if (sent) state.camera.framesSent++;
  showCameraState();
}

export async function startCamera() {
  await startDevice({
    device: 'camera',
    name: 'camera',
    constraints: { video: { width: { ideal: 640 }, height: { ideal: 480 } } },
    held: () => camera !== null,
    wire: async (stream, button) => {
      const video = $('cameraPreview');
      video.srcObject = stream;
      video.hidden = false;
      await video.play();
      camera = { stream, video, canvas: document.createElement('canvas'), timer: null };
      state.camera.on = true;
      sendFrame();
      camera.timer = setInterval(sendFrame, FRAME_EVERY_MS);
      setPressed(button, true, 'Stop camera');
      logLine('camera', `on (a frame every ${FRAME_EVERY_MS / 1000} s)`);
    },
  });
  showCameraState();
}

export function stopCamera(why) {
  if (camera) {
    clearInterval(camera.timer);
    stopTracks(camera.stream);
    camera.video.srcObject = null;
    camera.video.hidden = true;
    camera = null;
  }
  const wasOn = state.camera.on;
  state.camera.on = false;
  const button = $('camera');
  setPressed(button, false, 'Start camera');
  if (wasOn) logLine('camera', why ? `off: ${why}` : 'off');
  showCameraState();
  updateInputControls();
}

/** A new session: its conversation holds no frames. */
export function clearFrames() {
  state.camera.inConversation = [];
  showCameraState();
}
