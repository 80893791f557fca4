/**
 * What the redis connector keeps in Redis, shared by the connector (step thread) and its I/O thread:
 *
 *   list   `{prefix}:{requestId}:in:{to}`  one request's frames into instance `to`: [u16 key][u16 from][frame] each.
 *          The `{requestId}` hash tag keeps a request's lists on one Cluster shard and spreads requests over shards.
 *   bell   `{prefix}:bell:{to}`            pub/sub: "that list has frames": [u16 listLength][list][element?]. On one
 *          node a small element rides in its bell too (ringsWithFrame), so the consumer has it without an LPOP round
 *          trip; the list still holds it (consume-once, TTL, late consumers) and the LPOP that follows only acks it.
 *   ack    `{prefix}:ack:{from}`           pub/sub: "I popped N bytes of this request" (`{to}\n{bytes}\n{requestId}`).
 */
import { frameByteLength } from '../codec.ts';

/**
 * Elements up to this size ride in their bell: Thinker rows, codec frames and the first audio chunks (4 frames of
 * float32 at 24 kHz are ~30 KB); later audio chunks (25 frames, ~190 KB) would double Redis's traffic for no
 * latency that matters.
 */
export const BELL_FRAME_MAX_BYTES = 64 * 1024; // 64 KiB

/**
 * Whether an element of `elementBytes` rides in its bell. Producer and consumer apply the same rule to the same
 * size, so nothing in the element says it. Never in a Cluster: PUBLISH goes to every node over the cluster bus.
 */
export function ringsWithFrame(elementBytes: number, cluster: boolean): boolean {
  return !cluster && elementBytes <= BELL_FRAME_MAX_BYTES;
}

export function encodeBell(list: string, element: Uint8Array | null): Buffer {
  const l = Buffer.from(list);
  const bell = Buffer.allocUnsafe(2 + l.byteLength + (element?.byteLength ?? 0));
  bell.writeUInt16LE(l.byteLength, 0);
  l.copy(bell, 2);
  if (element) bell.set(element, 2 + l.byteLength);
  return bell;
}

export function decodeBell(bell: Buffer): { list: string; element: Buffer | null } {
  const listBytes = bell.readUInt16LE(0);
  const list = bell.toString('utf8', 2, 2 + listBytes);
  return { list, element: bell.byteLength > 2 + listBytes ? bell.subarray(2 + listBytes) : null };
}

export function listKey(prefix: string, requestId: string, to: string): string {
  return `${prefix}:{${requestId}}:in:${to}`;
}

export function channelKey(prefix: string, kind: 'bell' | 'ack', instance: string): string {
  return `${prefix}:${kind}:${instance}`;
}

/**
 * [u16 keyLength][u16 fromLength][key][from][pad to 8][frame]: the frame 8-aligned within the element. Written into
 * a fresh ArrayBuffer of its own (never Node's shared Buffer pool) so it can be transferred to the I/O thread.
 */
export function encodeElement(key: string, from: string, parts: readonly Uint8Array[]): Uint8Array {
  const k = Buffer.from(key);
  const f = Buffer.from(from);
  const headerBytes = align8(4 + k.byteLength + f.byteLength);
  const element = new Uint8Array(headerBytes + frameByteLength(parts));
  const view = new DataView(element.buffer);
  view.setUint16(0, k.byteLength, true);
  view.setUint16(2, f.byteLength, true);
  element.set(k, 4);
  element.set(f, 4 + k.byteLength);
  let at = headerBytes;
  for (const part of parts) {
    element.set(part, at);
    at += part.byteLength;
  }
  return element;
}

/**
 * The element's key and sender, and its frame copied into a fresh ArrayBuffer: 8-aligned (tensors are views into
 * the frame) and owned alone, so it can be transferred to the step thread. A reply Buffer may be a slice of the
 * client's read buffer, which must be neither kept nor transferred.
 */
export function decodeElement(element: Buffer): { key: string; from: string; frame: Uint8Array } {
  const keyLen = element.readUInt16LE(0);
  const fromLen = element.readUInt16LE(2);
  const key = element.toString('utf8', 4, 4 + keyLen);
  const from = element.toString('utf8', 4 + keyLen, 4 + keyLen + fromLen);
  const frame = new Uint8Array(element.subarray(align8(4 + keyLen + fromLen)));
  return { key, from, frame };
}

const align8 = (n: number) => (n + 7) & ~7;
