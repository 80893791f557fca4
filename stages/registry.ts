/**
 * Every stage kind Chorus runs, by name. Adding a kind: its folder stages/<kind>/ and one line here (its name and its
 * YAML section come from its descriptor); the rest of the checklist (its READY facts) is docs/architecture.md "What a
 * new stage kind costs". Nothing under src/engine or src/worker.
 */
import type { StageGraph, StageKind } from '../src/common/graph.ts';
import { code2wav } from './code2wav/descriptor.ts';
import { encoder } from './encoder/descriptor.ts';
import type { BuiltStage, KindSettings, PromptLimits, StageKindDescriptor } from './StageKindDescriptor.ts';
import type { StageContext } from '../src/worker/StageCore.ts';
import { talker } from './talker/descriptor.ts';
import { thinker } from './thinker/descriptor.ts';
import { tts } from './tts/descriptor.ts';

const kinds: Record<StageKind, StageKindDescriptor> = { thinker, talker, code2wav, encoder, tts };

export const stageKinds: Readonly<Record<StageKind, StageKindDescriptor>> = kinds;

export const stageKindNames = Object.keys(stageKinds) as StageKind[];

const builtIn = new Set<string>(stageKindNames);

export function descriptorOf(kind: StageKind): StageKindDescriptor {
  return stageKinds[kind];
}

/** Builds a stage of its kind (a stage process's way to build its core): its descriptor's, given the registry. */
export function createStage(ctx: StageContext, graph: StageGraph): Promise<BuiltStage> {
  return descriptorOf(ctx.spec.kind).createStage(ctx, graph, descriptorOf);
}

/** The YAML sections kinds declare of their own (`tts:`), with the kind each belongs to. */
export function kindSections(): { readonly kind: StageKind; readonly section: KindSettings }[] {
  return Object.values(stageKinds).flatMap((d) => (d.settings ? [{ kind: d.kind, section: d.settings }] : []));
}

/** What the config says of the entry stage's model (its kind's promptLimits); empty when it says nothing. */
export function entryPromptLimits(graph: StageGraph): PromptLimits {
  const entry = graph.stages.find((s) => s.stageId === graph.entryStageId);
  return (entry && descriptorOf(entry.kind).promptLimits?.(entry.model)) ?? {};
}

/**
 * Adds a kind whose folder is not under stages/ (the test tree's echo kind, test/helpers/kinds/echo): the same
 * as its line above would. Call it before a graph that names the kind is loaded; a stage process forked from
 * stages/stageEntry.ts knows only the kinds listed here, so such a kind runs in-process (a test's startWorker).
 */
export function registerStageKind(descriptor: StageKindDescriptor): void {
  if (Object.hasOwn(kinds, descriptor.kind)) throw new Error(`stage kind ${descriptor.kind} is registered already`);
  kinds[descriptor.kind] = descriptor;
  stageKindNames.push(descriptor.kind);
}

/**
 * Takes back a kind registerStageKind added, once its test is done: the unit tier runs its files in one process
 * (vitest.config.ts), where a kind left registered would show in every later file's schema and error messages.
 */
export function unregisterStageKind(kind: StageKind): void {
  if (builtIn.has(kind)) throw new Error(`stage kind ${kind} is built in`);
  if (!Object.hasOwn(kinds, kind)) return;
  delete kinds[kind];
  stageKindNames.splice(stageKindNames.indexOf(kind), 1);
}
