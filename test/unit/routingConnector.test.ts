/** RoutingConnector: a process with edges on two connectors sends each edge's frames through its own. */
import { describe, expect, it } from 'vitest';
import type { StageGraph } from '../../src/common/graph.ts';
import { createConnector, provisionEdges } from '../../transport/createConnector.ts';
import type { EdgeBinding } from '../../transport/edges.ts';
import { InprocConnector } from '../../transport/inproc/InprocConnector.ts';
import { RoutingConnector } from '../../transport/RoutingConnector.ts';

const bytes = (...xs: number[]) => Uint8Array.from(xs);

describe('RoutingConnector', () => {
  it('routes puts and gets by edge; cleanup and close reach every connector', async () => {
    const local = new InprocConnector();
    const remote = new InprocConnector();
    const router = new RoutingConnector([
      { edge: { from: 'thinker#0', to: 'talker#0', connector: 'local' }, connector: local },
      { edge: { from: 'talker#0', to: 'code2wav#0', connector: 'remote' }, connector: remote },
    ]);
    const deadline = Date.now() + 1_000;
    await router.put('thinker#0', 'talker#0', 'r_talker_0', bytes(1), deadline);
    await router.put('talker#0', 'code2wav#0', 'r_code2wav_0', bytes(2), deadline);
    // Each frame sits in the connector of its edge, and only there.
    expect(await local.get('thinker#0', 'talker#0', 'r_talker_0', deadline)).toEqual(bytes(1));
    expect(await remote.get('talker#0', 'code2wav#0', 'r_code2wav_0', deadline)).toEqual(bytes(2));
    await router.put('talker#0', 'code2wav#0', 'q_code2wav_0', bytes(3), deadline);
    expect(await router.get('talker#0', 'code2wav#0', 'q_code2wav_0', deadline)).toEqual(bytes(3));

    const pending = remote.get('talker#0', 'code2wav#0', 'gone_code2wav_0', Date.now() + 5_000);
    router.cleanup('gone');
    await expect(pending).rejects.toMatchObject({ code: 'CHORUS_ERR_REQUEST_CANCELLED' });
    await router.close();
    await expect(local.put('thinker#0', 'talker#0', 'x_talker_0', bytes(4), deadline)).rejects.toMatchObject({
      code: 'CHORUS_ERR_CONNECTOR_CLOSED',
    });
  });

  it('readNow and dropSent reach every connector that has them', () => {
    const calls: string[] = [];
    const withReads = Object.assign(new InprocConnector(), {
      readNow: () => calls.push('readNow'),
      dropSent: (id: string) => calls.push(`dropSent ${id}`),
    });
    const router = new RoutingConnector([
      { edge: { from: 'thinker#0', to: 'talker#0', connector: 'shm' }, connector: withReads },
      { edge: { from: 'talker#0', to: 'code2wav#0', connector: 'inproc' }, connector: new InprocConnector() },
    ]);
    router.readNow();
    router.dropSent('r');
    expect(calls).toEqual(['readNow', 'dropSent r']);
  });

  it('an edge no connector carries is a clear error', () => {
    const router = new RoutingConnector([
      { edge: { from: 'a#0', to: 'b#0', connector: 'x' }, connector: new InprocConnector() },
    ]);
    expect(() => router.get('b#0', 'c#0', 'k', Date.now() + 100)).toThrow(/no connector carries edge b#0->c#0/);
  });

  it('an edge to "stage#*" carries every instance of the stage, after the exact edges', async () => {
    const shm = new InprocConnector();
    const joined = new InprocConnector();
    const router = new RoutingConnector([
      { edge: { from: 'thinker#0', to: 'talker#*', connector: 'r' }, connector: joined },
      { edge: { from: 'thinker#0', to: 'talker#0', connector: 's' }, connector: shm },
    ]);
    const deadline = Date.now() + 1_000;
    await router.put('thinker#0', 'talker#0', 'a_talker_0', bytes(1), deadline);
    await router.put('thinker#0', 'talker#hostb-7', 'b_talker_0', bytes(2), deadline);
    expect(await shm.get('thinker#0', 'talker#0', 'a_talker_0', deadline)).toEqual(bytes(1));
    expect(await joined.get('thinker#0', 'talker#hostb-7', 'b_talker_0', deadline)).toEqual(bytes(2));
    expect(() => router.get('thinker#0', 'talkers#1', 'k', deadline)).toThrow(/no connector carries/);
    await router.close();
  });
});

describe('createConnector over the registry', () => {
  const graph = {
    connectors: {
      fast: { name: 'fast', kind: 'shm', options: { ringBytes: 64 * 1024 } },
      local: { name: 'local', kind: 'inproc', options: { capacityBytes: 64 * 1024 } },
    },
  } as unknown as StageGraph;
  const edges: EdgeBinding[] = [
    { from: 'a#0', to: 'b#0', connector: 'fast' },
    { from: 'b#0', to: 'c#0', connector: 'local' },
  ];

  it('a process on edges of two kinds gets a router; the others get their own kind', async () => {
    const provisioned = await provisionEdges(graph, edges);
    try {
      expect(provisioned.edges.map((e) => [e.connector, !!e.ringName, !!e.hub])).toEqual([
        ['fast', true, false],
        ['local', false, true],
      ]);
      const [a, b, c] = await Promise.all(
        ['a#0', 'b#0', 'c#0'].map((self) => createConnector(graph, self, provisioned.edges)),
      );
      expect([a.kind, b.constructor.name, c.kind]).toEqual(['shm', 'RoutingConnector', 'inproc']);
      const deadline = Date.now() + 2_000;
      await a.put('a#0', 'b#0', 'r_b_0', bytes(1, 2), deadline);
      expect(await b.get('a#0', 'b#0', 'r_b_0', deadline)).toEqual(bytes(1, 2));
      await b.put('b#0', 'c#0', 'r_c_0', bytes(3), deadline);
      expect(await c.get('b#0', 'c#0', 'r_c_0', deadline)).toEqual(bytes(3));

      // An inproc instance's cleanup and close are its own, as another process's would be.
      const waiting = c.get('b#0', 'c#0', 'q_c_0', Date.now() + 5_000);
      b.cleanup('q');
      await b.close();
      await b.close();
      await expect(b.put('b#0', 'c#0', 'q_c_0', bytes(4), deadline)).rejects.toMatchObject({
        code: 'CHORUS_ERR_CONNECTOR_CLOSED',
      });
      await expect(b.get('a#0', 'b#0', 'r_b_1', deadline)).rejects.toMatchObject({
        code: 'CHORUS_ERR_CONNECTOR_CLOSED',
      });
      const other = await createConnector(graph, 'b#0', provisioned.edges);
      await other.put('b#0', 'c#0', 'q_c_0', bytes(5), deadline);
      expect(await waiting).toEqual(bytes(5));
      await Promise.all([a.close(), c.close(), other.close()]);
    } finally {
      provisioned.release();
    }
  });

  it('an edge on a connector the graph lacks, or of a kind not built, is a clear error', async () => {
    await expect(createConnector(graph, 'a#0', [{ from: 'a#0', to: 'b#0', connector: 'slow' }])).rejects.toThrow(
      /edge a#0->b#0 names connector slow, which the graph does not define/,
    );
    const nats = { connectors: { r: { name: 'r', kind: 'nats', options: {} } } } as unknown as StageGraph;
    await expect(provisionEdges(nats, [{ from: 'a#0', to: 'b#0', connector: 'r' }])).rejects.toThrow(
      /connector r is of kind nats, which is not built \(built: shm, inproc, redis\)/,
    );
  });

  it('an inproc hub is found only while provisioned, in the process that made it', async () => {
    const local = [{ from: 'b#0', to: 'c#0', connector: 'local' }];
    const provisioned = await provisionEdges(graph, local);
    provisioned.release();
    await expect(createConnector(graph, 'c#0', provisioned.edges)).rejects.toThrow(/is not in this process/);
  });
});
