/**
 * The chat completion fields OpenAI defines beyond the ones Chorus implements (chatRequest.ts), in two tables: those
 * that change nothing in an answer, taken as they come, and those that ask for something Chorus does not do, refused
 * by name unless they ask for nothing (null). Every other field is refused by the body's schema, which is closed: a
 * misspelt `temprature` taken silently would be a wrong answer the client cannot see (issue 41).
 */
import { Type } from '@sinclair/typebox';
import { ErrorCodes } from '../../common/errors.ts';
import { ClientInputError } from '../validate.ts';

/**
 * Change nothing in the answer: who asked (user, safety_identifier), what OpenAI stores or bills (metadata, store,
 * service_tier), a speed hint (prediction), and OpenAI's cache routing
 * hints (prompt_cache_key groups requests onto warm machines; it partitions nothing: cache_salt does).
 */
const takenAsTheyCome = [
  'user',
  'safety_identifier',
  'metadata',
  'store',
  'service_tier',
  'prediction',
  'prompt_cache_key',
  'prompt_cache_retention',
  'prompt_cache_options',
] as const;

/** Ask for something Chorus does not do: refused when set to anything but null. */
const refusedUnlessNull: Record<string, string> = {
  reasoning_effort:
    'reasoning settings are not supported: the Thinker has no reasoning mode; leave reasoning_effort out',
  verbosity: 'verbosity cannot be set: the answer is as long as the model makes it (cap it with max_tokens)',
  web_search_options: 'web search is not supported: the pipeline answers from the prompt alone; leave it out',
  moderation: 'moderated completions are not supported: moderate the input and output yourself; leave it out',
};

/** Schema entries for both tables: accepted by the schema, then judged by refuseUnsupportedExtras. */
export const otherOpenAiFields = Object.fromEntries(
  [...takenAsTheyCome, ...Object.keys(refusedUnlessNull)].map((name) => [name, Type.Optional(Type.Unknown())]),
);

/** Throws ClientInputError (CHORUS_ERR_PARAM_UNSUPPORTED) naming the first field that asks for what is not done. */
export function refuseUnsupportedExtras(body: object): void {
  for (const [name, why] of Object.entries(refusedUnlessNull)) {
    const value = (body as Record<string, unknown>)[name];
    if (value !== undefined && value !== null) throw new ClientInputError(why, name, ErrorCodes.PARAM_UNSUPPORTED);
  }
}
