/* global process, fetch */
// A client in its own process sending what one request must not stall main with (test/e2e/server.longPrompt.test.ts):
// the bodies and frames are built and sent here, so the test's event-loop probe measures the server alone.
// Usage: node bigRequestsClient.mjs BASE_URL WS_URL PROMPT_BYTE_LIMIT. Prints one JSON line per step, then "done".
import { WebSocket } from 'ws';

const [base, wsUrl, limitText] = process.argv.slice(2);
const MiB = 1024 * 1024;
const say = (step, result) => process.stdout.write(`${JSON.stringify({ step, ...result })}\n`);

async function chat(step, contentBytes) {
  const body = JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(contentBytes) }], max_tokens: 2 });
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  say(step, { status: res.status, body: await res.json() });
}

/** The first server event (seen or to come) that matches. */
function eventWhere(events, ws, match) {
  return new Promise((resolve) => {
    const check = () => {
      const found = events.find(match);
      if (!found) return;
      ws.off('message', check);
      resolve(found);
    };
    ws.on('message', check);
    check();
  });
}

async function realtime() {
  const ws = new WebSocket(wsUrl);
  const events = [];
  ws.on('message', (data) => events.push(JSON.parse(data.toString())));
  await eventWhere(events, ws, (e) => e.type === 'session.created');
  const megabyte = 'y'.repeat(MiB);
  ws.send(JSON.stringify({ type: 'session.update', event_id: 'instr', session: { instructions: megabyte } }));
  say('sessionInstructions', { event: await eventWhere(events, ws, (e) => e.error?.event_id === 'instr') });
  ws.send(
    JSON.stringify({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello' }] },
    }),
  );
  ws.send(JSON.stringify({ type: 'response.create', event_id: 'resp', response: { instructions: megabyte } }));
  const outcome = await eventWhere(events, ws, (e) => e.error?.event_id === 'resp' || e.type === 'response.done');
  say('responseInstructions', { event: outcome, created: events.some((e) => e.type === 'response.created') });
  ws.close();
}

await chat('overBodyLimit', 16 * MiB);
await chat('underBodyLimit', 15 * MiB);
await chat('overPositions', Number(limitText) - 1024); // under the byte bound, ~63k tokens: over the positions
await realtime();
say('done', {});
