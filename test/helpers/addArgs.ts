/** A planned `add`'s kind arguments, typed as the kind that reads them (src/kinds/<kind>/protocol.ts). */
import type { Code2WavArgs } from '../../src/kinds/code2wav/protocol.ts';
import type { EncoderArgs } from '../../src/kinds/encoder/protocol.ts';
import type { TalkerArgs } from '../../src/kinds/talker/protocol.ts';
import type { ThinkerArgs } from '../../src/kinds/thinker/protocol.ts';
import type { AddRequest } from '../../src/worker/messages.ts';

type Add = Pick<AddRequest, 'args'> | undefined;

/** Partial: an add of another kind has none of these (asserting `undefined` on it is meaningful). */
export const thinkerArgs = (add: Add) => (add?.args ?? {}) as Partial<ThinkerArgs>;
export const talkerArgs = (add: Add) => (add?.args ?? {}) as Partial<TalkerArgs>;
export const encoderArgs = (add: Add) => (add?.args ?? {}) as Partial<EncoderArgs>;
export const code2wavArgs = (add: Add) => (add?.args ?? {}) as Partial<Code2WavArgs>;
