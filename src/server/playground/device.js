// A device the page opens from its button (the microphone, the camera): the steps from the click to running, and
// what a failure leaves behind.
import { $, logLine, setStatus, state } from './page.js';
import { connect } from './socket.js';

/** Stops every track of a stream: the browser's light goes off. */
export function stopTracks(stream) {
  for (const track of stream.getTracks()) track.stop();
}

/**
 * Starts `device` ('mic' or 'camera': its key in `state` and its button's id) from its button: connects, asks the
 * browser for a stream (`constraints`) and hands it to `wire`, which sets the device running. `held()` says whether
 * the device kept the stream (its stop then stops it); a failure stops a stream not held, and why is kept in the
 * device's state, shown (as `name`) and logged. The button is disabled while it starts.
 */
export async function startDevice({ device, name, constraints, wire, held }) {
  const button = $(device);
  button.disabled = true;
  state[device].error = null;
  let stream = null;
  try {
    await connect();
    stream = await navigator.mediaDevices.getUserMedia(constraints);
    await wire(stream, button);
  } catch (err) {
    if (stream && !held()) stopTracks(stream);
    state[device].error = err.message;
    setStatus(`${name}: ${err.message}`);
    logLine(device, `failed: ${err.message}`);
  } finally {
    button.disabled = false;
  }
}
