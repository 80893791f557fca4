/** A planned `add`'s kind arguments, typed as the kind that reads them (stages/<kind>/protocol.ts). */
import type { Code2WavArgs } from '../../stages/code2wav/protocol.ts';
import type { EncoderArgs } from '../../stages/encoder/protocol.ts';
import type { TalkerArgs } from '../../stages/talker/protocol.ts';
import type { ThinkerArgs } from '../../stages/thinker/protocol.ts';
import type { AddRequest } from '../../src/worker/messages.ts';

type Add = Pick<AddRequest, 'args'> | undefined;

/** Partial: an add of another kind has none of these (asserting `undefined` on it is meaningful). */
export const thinkerArgs = (add: Add) => (add?.args ?? {}) as Partial<ThinkerArgs>;
export const talkerArgs = (add: Add) => (add?.args ?? {}) as Partial<TalkerArgs>;
export const encoderArgs = (add: Add) => (add?.args ?? {}) as Partial<EncoderArgs>;
export const code2wavArgs = (add: Add) => (add?.args ?? {}) as Partial<Code2WavArgs>;
