/**
 * A request's cache partition (GenerateRequest.cacheSalt) as the engine carries it: a digest of the salt, fixed in
 * size and not the client's text, on the prepared prompt and each of its media items. Main's router names the
 * prompt's blocks within it (KvIndex), the EC store looks items up within it (ecPlan), and every stage gets it in its
 * `add` (AddRequest.cacheSalt): the Thinker and Talker name their prefix-cache blocks from it (saltedRoot) and the
 * encoders key their outputs with it, so two salts share neither KV nor encoder rows.
 */
import { createHash } from 'node:crypto';
import type { PreparedPrompt } from './mediaPrompt.ts';

/** 132 bits: a collision between two tenants' salts is as likely as one between two block names. */
const DIGEST_CHARS = 22;

export function saltDigest(cacheSalt: string): string {
  return createHash('sha256').update(cacheSalt).digest('base64url').slice(0, DIGEST_CHARS);
}

/** The prompt in the salt's partition; unchanged without a salt (the default partition). */
export function inPartition(prompt: PreparedPrompt, cacheSalt: string | undefined): PreparedPrompt {
  if (cacheSalt === undefined) return prompt;
  const salt = saltDigest(cacheSalt);
  return { ...prompt, cacheSalt: salt, items: prompt.items.map((item) => ({ ...item, cacheSalt: salt })) };
}
