/** The e2e tests' fetch for the OpenAI SDK: a 429 is sent again after its Retry-After, anything else is the answer. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { fetchAdmitted } from '../helpers/fetchAdmitted.ts';

let server: Server | null = null;
afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve));
  server = null;
});

/** A server answering each request with the next status of `statuses` (its body the request's own body). */
async function serve(statuses: number[]): Promise<{ url: string; bodies: string[] }> {
  const bodies: string[] = [];
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      bodies.push(body);
      res.writeHead(statuses.shift() ?? 200, { 'retry-after': '0' }).end(body);
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}/`, bodies };
}

describe('fetchAdmitted', () => {
  it('sends a refused request again, body and all, until it is admitted', async () => {
    const { url, bodies } = await serve([429, 429, 200]);
    const res = await fetchAdmitted()(url, { method: 'POST', body: '{"n":1}' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('{"n":1}');
    expect(bodies).toEqual(['{"n":1}', '{"n":1}', '{"n":1}']);
  });

  it('hands any other status back at once, and the last 429 after its tries', async () => {
    const failed = await serve([500, 200]);
    expect((await fetchAdmitted()(failed.url)).status).toBe(500);
    expect(failed.bodies).toHaveLength(1);
    await new Promise((resolve) => server?.close(resolve));
    const busy = await serve([429, 429, 429]);
    expect((await fetchAdmitted(2)(busy.url)).status).toBe(429);
    expect(busy.bodies).toHaveLength(2);
  });
});
