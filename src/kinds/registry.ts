/**
 * Every stage kind Chorus runs, by name. Adding a kind: its folder under src/kinds/ and one line here.
 */
import type { StageKind } from '../common/graph.ts';
import { code2wav } from './code2wav/descriptor.ts';
import { encoder } from './encoder/descriptor.ts';
import type { StageKindDescriptor } from './StageKindDescriptor.ts';
import { talker } from './talker/descriptor.ts';
import { thinker } from './thinker/descriptor.ts';

export const stageKinds: Readonly<Record<StageKind, StageKindDescriptor>> = { thinker, talker, code2wav, encoder };

export const stageKindNames = Object.keys(stageKinds) as StageKind[];

export function descriptorOf(kind: StageKind): StageKindDescriptor {
  return stageKinds[kind];
}
