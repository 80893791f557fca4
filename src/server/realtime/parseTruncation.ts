/**
 * session.update's `truncation`, checked by hand rather than by the event schema: a schema union reports a bad
 * ratio or a misspelt type as "not in any accepted form", where the client needs the field and the accepted values.
 * Unknown keys are refused too: a misspelt limit silently ignored would let a session grow past what was asked.
 */
import { ClientInputError } from '../validate.ts';
import { reservedForAnswer, type TruncationSetting } from './planTruncation.ts';

const PARAM = 'session.truncation';
const FORMS = '"auto", "disabled" or {type: "retention_ratio", retention_ratio: r} with 0 < r <= 1';

const show = (v: unknown) => (v === undefined ? 'nothing' : JSON.stringify(v).slice(0, 64));
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function refuseUnknownKeys(value: Record<string, unknown>, known: readonly string[], param: string): void {
  const unknown = Object.keys(value).find((k) => !known.includes(k));
  if (unknown !== undefined)
    throw new ClientInputError(
      `${param}.${unknown} is not a field of ${param} (its fields: ${known.join(', ')})`,
      param,
    );
}

/** The setting a session.update asks for, or ClientInputError naming the field and what it may be. */
export function parseTruncation(value: unknown): TruncationSetting {
  if (value === 'auto' || value === 'disabled') return value;
  if (!isObject(value)) throw new ClientInputError(`${PARAM} must be ${FORMS}; got ${show(value)}`, PARAM);
  if (value.type !== 'retention_ratio') {
    throw new ClientInputError(
      `${PARAM}.type must be "retention_ratio" (or ${PARAM} the string "auto" or "disabled"); got ${show(value.type)}`,
      `${PARAM}.type`,
    );
  }
  refuseUnknownKeys(value, ['type', 'retention_ratio', 'token_limits'], PARAM);
  const ratio = value.retention_ratio;
  if (typeof ratio !== 'number' || !(ratio > 0 && ratio <= 1)) {
    throw new ClientInputError(
      `${PARAM}.retention_ratio must be a number in (0, 1] (the share of the allowed positions kept when the ` +
        `conversation is truncated, e.g. 0.8); got ${show(ratio)}`,
      `${PARAM}.retention_ratio`,
    );
  }
  if (value.token_limits === undefined) return { type: 'retention_ratio', retention_ratio: ratio };
  const limitsParam = `${PARAM}.token_limits`;
  if (!isObject(value.token_limits))
    throw new ClientInputError(`${limitsParam} must be an object {post_instructions?: n}`, limitsParam);
  refuseUnknownKeys(value.token_limits, ['post_instructions'], limitsParam);
  const post = value.token_limits.post_instructions;
  if (post === undefined) return { type: 'retention_ratio', retention_ratio: ratio, token_limits: {} };
  if (typeof post !== 'number' || !Number.isInteger(post) || post < 1) {
    throw new ClientInputError(
      `${limitsParam}.post_instructions must be a positive integer (positions the conversation may take after ` +
        `the instructions); got ${show(post)}`,
      `${limitsParam}.post_instructions`,
    );
  }
  return { type: 'retention_ratio', retention_ratio: ratio, token_limits: { post_instructions: post } };
}

/**
 * As OpenAI documents it, post_instructions cannot be higher than the context less the answer's cap: checked at
 * session.update against the session's max_output_tokens (`answerPositions`) when the Thinker's positions are known.
 * A response asking for a larger cap later is not refused for it: its limit is the smaller one.
 */
export function checkTokenLimits(
  setting: TruncationSetting,
  maxPositions: number | null,
  answerPositions: number,
): void {
  const post = typeof setting === 'object' ? setting.token_limits?.post_instructions : undefined;
  if (post === undefined || maxPositions === null) return;
  const most = maxPositions - reservedForAnswer(answerPositions, maxPositions);
  if (post > most) {
    throw new ClientInputError(
      `${PARAM}.token_limits.post_instructions is ${post}, above what the thinker's ${maxPositions} positions ` +
        `leave once ${maxPositions - most} are kept for the answer (max_output_tokens): at most ${most}`,
      `${PARAM}.token_limits.post_instructions`,
    );
  }
}
