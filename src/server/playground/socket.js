// The realtime connection: one WebSocket to /v1/realtime, opened on demand (Send or the mic), events sent as JSON.
import { $, setStatus, state } from './page.js';

/**
 * Where the socket's open, server events and close go: main.js wires them, since their handlers import this module.
 * `opened` runs before anyone awaiting connect() sends a frame: a new session gets the settings panel first.
 */
let handlers = { opened: () => {}, event: () => {}, closed: () => {} };

export function onSocket(onOpened, onEvent, onClosed) {
  handlers = { opened: onOpened, event: onEvent, closed: onClosed };
}

/** The socket once open (it may be opening already: the mic and Send can both ask at once). */
function opened(ws) {
  if (ws.readyState === WebSocket.OPEN) return Promise.resolve(ws);
  return new Promise((resolve, reject) => {
    ws.addEventListener('open', () => resolve(ws), { once: true });
    ws.addEventListener('error', () => reject(new Error('could not connect to /v1/realtime')), { once: true });
  });
}

export function connect() {
  if (state.ws && state.ws.readyState <= WebSocket.OPEN) return opened(state.ws);
  const key = $('apiKey').value.trim();
  const protocols = key ? ['realtime', `openai-insecure-api-key.${key}`] : ['realtime'];
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/v1/realtime`;
  const ws = new WebSocket(url, protocols);
  state.ws = ws;
  // Registered before opened()'s listener, so it runs first.
  ws.addEventListener('open', () => handlers.opened(), { once: true });
  // A socket the page has left (New session) is over for it: late events and its close change nothing.
  ws.onmessage = (msg) => {
    if (state.ws === ws) handlers.event(JSON.parse(msg.data));
  };
  ws.onclose = () => {
    if (state.ws !== ws) return;
    state.ws = null;
    setStatus('disconnected');
    handlers.closed();
  };
  return opened(ws);
}

export function sendEvent(event) {
  if (!state.ws || state.ws.readyState !== WebSocket.OPEN) return false;
  state.ws.send(JSON.stringify(event));
  return true;
}
