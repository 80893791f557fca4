/**
 * The engine names a media item by its place in the messages it was given: "messages[2].content[1] (image): ...".
 * The front end does not always give the client's messages one to one (HTTP drops empty messages; a realtime
 * conversation is rendered from items), so before an error or warning reaches a client the name is rewritten
 * into the client's own terms: the message index in its request body, or the realtime item id.
 */
import { ChorusError, type SerializedError } from '../../common/errors.ts';
import { ClientInputError } from '../validate.ts';

/** Client name of part `part` of engine message `message`, or null to leave the engine's name. */
export type ItemNamer = (message: number, part: number) => string | null;

const ENGINE_ITEM = /messages\[(\d+)\]\.content\[(\d+)\]/g;

export function renameItems(text: string, namer: ItemNamer): string {
  return text.replace(ENGINE_ITEM, (whole, m: string, p: string) => namer(Number(m), Number(p)) ?? whole);
}

/** The engine position of the item an engine message starts with ("messages[2].content[1] ..."). */
export function leadingItem(text: string): { readonly message: number; readonly part: number } | null {
  const m = /^messages\[(\d+)\]\.content\[(\d+)\]/.exec(text);
  return m ? { message: Number(m[1]), part: Number(m[2]) } : null;
}

/** HTTP: the index in the request body of each message the engine was given. */
export function bodyNamer(bodyIndexOf: readonly number[]): ItemNamer {
  return (message, part) => {
    const i = bodyIndexOf[message];
    return i === undefined ? null : `messages[${i}].content[${part}]`;
  };
}

/** The body path of the media item a (renamed) message starts with: OpenAI's `param` for that error. */
export function mediaParam(message: string): string | null {
  return /^(messages\[\d+\]\.content\[\d+\])/.exec(message)?.[1] ?? null;
}

/** The error with its item names rewritten; a media error also says which field (OpenAI's `param`). */
export function renameError(err: unknown, namer: ItemNamer): unknown {
  if (!(err instanceof ChorusError) || err instanceof ClientInputError) return err;
  const message = renameItems(err.message, namer);
  const param = mediaParam(message);
  if (message === err.message && param === null) return err;
  return new ClientInputError(message, param, err.code);
}

export function renameSerialized(e: SerializedError, namer: ItemNamer): SerializedError {
  return { ...e, message: renameItems(e.message, namer) };
}
