/**
 * The control-plane guard (src/control/ControlGuard.ts + wire.ts): whatever arrives on a control channel,
 * receive() never throws; garbage, truncated msgpack, another protocol version, a foreign or misrouted message and
 * a body without its shape are dropped, counted on chorus_control_messages_dropped_total and logged at warn once per
 * channel kind and reason; a valid message is delivered as sent.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { Packr } from 'msgpackr';
import { pino } from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { bridgeEngineDiagnostics, engineMetrics } from '../../src/server/metrics/metrics.ts';
import { ControlGuard } from '../../src/control/ControlGuard.ts';
import { stageToMainProblem } from '../../src/control/controlChecks.ts';
import { MAX_CONTROL_MESSAGE_BYTES } from '../../src/worker/ControlChannel.ts';
import { CONTROL_PROTOCOL_VERSION, packControl, type Heartbeat } from '../../src/control/wire.ts';

const HEARTBEAT: Heartbeat = {
  instance: 'talker#b1',
  stageId: 'talker',
  host: 'hostb',
  pid: 42,
  configHash: 'abc',
  startedAtMs: 1_764_547_200_000, // 2025-12-01 (a wall-clock time: EpochMs)
  lease: 'token hostb 42',
};
const raw = new Packr({ useRecords: false });

/** A guard whose log lines are kept (pino's JSON, one object per line). */
function guardWithLog() {
  const lines: { level: number; msg: string; reason?: string; detail?: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  const guard = new ControlGuard(pino({ level: 'debug' }, sink));
  const warnings = () => lines.filter((l) => l.level === 40);
  return { guard, lines, warnings };
}

async function dropped(channel: string, reason: string): Promise<number> {
  const { values } = await engineMetrics.controlMessagesDropped.get();
  return values.find((v) => v.labels.channel === channel && v.labels.reason === reason)?.value ?? 0;
}

describe('ControlGuard', () => {
  beforeAll(() => bridgeEngineDiagnostics());

  it('delivers a valid message as it was sent', () => {
    const { guard, lines } = guardWithLog();
    const got: Heartbeat[] = [];
    guard.receive('heartbeat', 'chorus:hb', packControl('heartbeat', HEARTBEAT), (hb) => got.push(hb));
    expect(got).toEqual([HEARTBEAT]);
    expect(lines).toEqual([]);
  });

  const cases: [string, string, () => Buffer][] = [
    ['garbage', 'malformed', () => Buffer.from('garbage')],
    ['truncated msgpack', 'malformed', () => packControl('heartbeat', HEARTBEAT).subarray(0, 20)],
    ['another protocol version', 'version', () => raw.pack({ v: CONTROL_PROTOCOL_VERSION + 1, ch: 'heartbeat' })],
    ['a message from before versions', 'version', () => raw.pack(HEARTBEAT)],
    ['msgpack that is no envelope', 'foreign', () => raw.pack({ hello: 'world' })],
    ['a scalar', 'foreign', () => raw.pack(7)],
    [
      'an envelope for another channel',
      'foreign',
      () => packControl('deployment', { configHash: 'a', host: 'h', pid: 1 }),
    ],
    [
      'a heartbeat without its lease',
      'invalid',
      () => raw.pack({ v: CONTROL_PROTOCOL_VERSION, ch: 'heartbeat', body: { ...HEARTBEAT, lease: 7 } }),
    ],
    ['over the size limit', 'oversize', () => Buffer.alloc(MAX_CONTROL_MESSAGE_BYTES + 1)],
  ];

  it.each(cases)('drops %s (%s), counts it and logs it once', async (_what, reason, bytes) => {
    const { guard, lines, warnings } = guardWithLog();
    const before = await dropped('heartbeat', reason);
    const delivered: unknown[] = [];
    for (let i = 0; i < 3; i++) guard.receive('heartbeat', 'chorus:hb', bytes(), (hb) => delivered.push(hb));
    expect(delivered).toEqual([]);
    expect((await dropped('heartbeat', reason)) - before).toBe(3);
    expect(warnings()).toHaveLength(1); // once per channel kind and reason; the rest at debug
    expect(warnings()[0].reason).toBe(reason);
    expect(lines.filter((l) => l.level === 20)).toHaveLength(2);
  });

  it('names both versions when it drops another version', () => {
    const { guard, warnings } = guardWithLog();
    guard.receive('to_main', 'chorus:ctl:main', raw.pack({ v: 7, ch: 'to_main', body: {} }), () => undefined);
    const v = CONTROL_PROTOCOL_VERSION;
    const speaks = new RegExp(`version 7.*this process speaks version ${v}.*same Chorus version`);
    expect(warnings()[0].msg).toMatch(speaks);
  });

  it('drops messages of unknown types and messages without their fields, on every channel kind', () => {
    const { guard, warnings } = guardWithLog();
    const delivered: unknown[] = [];
    const deliver = (m: unknown) => delivered.push(m);
    const envelope = (ch: string, body: unknown) => raw.pack({ v: CONTROL_PROTOCOL_VERSION, ch, body });
    guard.receive('to_instance', 'chorus:ctl:talker#b1', envelope('to_instance', { type: 'explode' }), deliver);
    guard.receive('to_instance', 'chorus:ctl:talker#b1', envelope('to_instance', { type: 'abort' }), deliver);
    // drop_all is the channel's own doing, never main's: one on the wire is not obeyed.
    guard.receive('to_instance', 'c', envelope('to_instance', { type: 'drop_all', reason: 'x' }), deliver);
    guard.receive('to_main', 'chorus:ctl:main', envelope('to_main', { from: 'x', msg: { type: 'ready' } }), deliver);
    guard.receive('to_main', 'chorus:ctl:main', envelope('to_main', { from: 1, msg: { type: 'drained' } }), deliver);
    guard.receive('deployment', 'chorus:deployment', envelope('deployment', { configHash: 1 }), deliver);
    expect(delivered).toEqual([]);
    expect(warnings().map((w) => w.reason)).toEqual(['invalid', 'invalid', 'invalid']); // one per channel kind
  });

  it('keeps going when the handler of a valid message throws (handler_error)', async () => {
    const { guard, warnings } = guardWithLog();
    const before = await dropped('heartbeat', 'handler_error');
    const bytes = packControl('heartbeat', HEARTBEAT);
    expect(() =>
      guard.receive('heartbeat', 'chorus:hb', bytes, () => {
        throw new Error('a bug');
      }),
    ).not.toThrow();
    expect((await dropped('heartbeat', 'handler_error')) - before).toBe(1);
    expect(warnings()[0].reason).toBe('handler_error');
  });

  it('checks IPC messages by shape: unknown or incomplete ones dropped, valid ones delivered', async () => {
    const { guard } = guardWithLog();
    const before = await dropped('ipc', 'invalid');
    const delivered: unknown[] = [];
    for (const msg of [null, 'text', { type: 'nope' }, { type: 'finished', requestId: 'r' }])
      guard.accept('ipc:1', msg, stageToMainProblem, (m) => delivered.push(m));
    expect((await dropped('ipc', 'invalid')) - before).toBe(4);
    const finished = { type: 'finished', requestId: 'r', finishReason: 'stop', numTokens: 3 };
    guard.accept('ipc:1', finished, stageToMainProblem, (m) => delivered.push(m));
    expect(delivered).toEqual([finished]);
  });

  it('survives 8,000 random payloads on every channel kind without throwing or delivering', () => {
    const { guard } = guardWithLog();
    let delivered = 0;
    for (const kind of ['heartbeat', 'to_main', 'to_instance', 'deployment'] as const)
      for (let i = 0; i < 2_000; i++) guard.receive(kind, kind, randomBytes(1 + (i % 200)), () => delivered++);
    expect(delivered).toBe(0);
  });
});
