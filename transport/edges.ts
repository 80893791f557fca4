import { Type, type Static } from '@sinclair/typebox';
import { ShortText } from '../src/common/wireValues.ts';

/** An end of an edge: an instance, `main`, or `<stage>#*` (below). */
const EdgeEnd = Type.String({
  pattern: '^(main|[a-z0-9]+(-[a-z0-9]+)*#([A-Za-z0-9][A-Za-z0-9._-]*|\\*))$',
  maxLength: 128,
});

/** How a process finds its peers: every edge it reads or writes, as main provisioned it (sent in `boot`). */
export const EdgeBindingSchema = Type.Object(
  {
    /**
     * Instance id, e.g. "thinker#0" or "main"; or "talker#*": every instance of the stage, for connectors whose
     * edges need no provisioning (redis), so instances that join later are linked too.
     */
    from: EdgeEnd,
    to: EdgeEnd,
    connector: ShortText, // connector name in the graph
    ringName: Type.Optional(ShortText), // shm only: the ring main created for this edge
    hub: Type.Optional(ShortText), // inproc only: the in-process hub the edge's instances share
  },
  { additionalProperties: false },
);
export type EdgeBinding = Static<typeof EdgeBindingSchema>;

/** The end of an edge names `instance`: exactly, or as "stage#*" for every instance of its stage. */
export function endMatches(end: string, instance: string): boolean {
  return end === instance || (end.endsWith('#*') && instance.startsWith(end.slice(0, -1)));
}

/** `instance` reads or writes the edge. */
export function edgeTouches(edge: EdgeBinding, instance: string): boolean {
  return endMatches(edge.from, instance) || endMatches(edge.to, instance);
}
