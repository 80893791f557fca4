/**
 * A remote instance owns its name through a lease on the control plane: its value is `{token} {host} {pid}` (a fresh
 * random token per process), kept for LEASE_TTL_MS, renewed on every heartbeat (heartbeatWorker.ts) and ended on a
 * clean shutdown. Two processes under one name made main flap between them every few hundred ms and drop both when
 * one left (issue 33); default names (hostname-pid) can collide in containers. The engine holds the value
 * (ControlLink.claimLease: atomic check-and-set); the rules are here.
 *
 * - Start: the name is taken if the lease is free or already ours. If another value holds it, we watch its TTL: a
 *   live holder renews it (the TTL goes up), and we are refused (INSTANCE_NAME_TAKEN); a holder that died does not,
 *   its lease lapses within LEASE_TTL_MS and we take it (a restarted instance replaces the one it was).
 * - Fencing: every renewal checks the value is still ours. An instance whose lease was taken over (it was cut off
 *   longer than the TTL, and another took the name) learns it on its next renewal and stops beating; main admits a
 *   heartbeat only under the lease its name holds (Membership.ts).
 * - The lease ends only by its owner (compare-and-delete) or by its TTL: no process deletes another's.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import type { ControlLink } from './ControlLink.ts';

/** How long a lease outlives its last renewal: > main's HEARTBEAT_TTL_MS, so a lapsed lease is a dead holder. */
export const LEASE_TTL_MS = 5_000;
/** How often a name's TTL is read while waiting to see whether its holder lives (< the renewal interval). */
const LEASE_PROBE_MS = 100;

export interface InstanceLease {
  readonly instance: string;
  /** `{token} {host} {pid}`: compared whole, so the holder's host and pid travel with it for messages. */
  readonly value: string;
}

/** A lease value of this process (not yet taken). */
export function newLease(instance: string): InstanceLease {
  return { instance, value: `${randomUUID()} ${hostname()} ${process.pid}` };
}

/** "host X, pid N" from a lease value, for messages. */
export function describeHolder(value: string): string {
  const [, host, pid] = value.split(' ');
  return host && pid ? `host ${host}, pid ${pid}` : 'another process';
}

/** One claim (take, or renew when ours). */
export function claimLease(link: ControlLink, lease: InstanceLease) {
  return link.claimLease(lease.instance, lease.value, LEASE_TTL_MS);
}

/**
 * Takes the name for this process, waiting for a dead holder's lease to lapse (at most LEASE_TTL_MS); a live
 * holder (one that renews meanwhile) gets this process refused.
 */
export async function acquireLease(link: ControlLink, lease: InstanceLease): Promise<void> {
  let lastTtlMs = Number.POSITIVE_INFINITY;
  for (;;) {
    const claim = await claimLease(link, lease);
    if (claim.held) return;
    // A TTL that went up was renewed: its holder lives. No TTL at all: not a lease Chorus wrote, nobody renews it.
    if (claim.ttlMs > lastTtlMs || claim.ttlMs === -1)
      throw nameTaken(
        lease.instance,
        link.nameOf({ kind: 'lease', instance: lease.instance }),
        claim.holder,
        claim.ttlMs,
      );
    lastTtlMs = claim.ttlMs;
    await delay(Math.max(1, Math.min(LEASE_PROBE_MS, claim.ttlMs)));
  }
}

/** Ends the lease if it is still ours (a clean shutdown leaves nothing behind). */
export function releaseLease(link: ControlLink, lease: InstanceLease): Promise<void> {
  return link.releaseLease(lease.instance, lease.value);
}

export function nameTaken(instance: string, key: string, holder: string, ttlMs?: number): ChorusError {
  const noTtl = ttlMs === -1 ? ` (the key ${key} has no TTL: not a Chorus lease; delete it if nothing uses it)` : '';
  return new ChorusError(
    ErrorCodes.INSTANCE_NAME_TAKEN,
    `the instance name ${instance} is held by a live stage (${describeHolder(holder)})${noTtl}: give this one ` +
      'another --name, or stop that one first (a stage that died frees its name within ' +
      `${LEASE_TTL_MS / 1000} s)`,
  );
}
