/** How a process finds its peers: every edge it reads or writes, as main provisioned it. */
export interface EdgeBinding {
  /**
   * Instance id, e.g. "thinker#0" or "main"; or "talker#*": every instance of the stage, for connectors whose edges
   * need no provisioning (redis), so instances that join later are linked too.
   */
  readonly from: string;
  readonly to: string;
  readonly connector: string; // connector name in the graph
  readonly ringName?: string; // shm only: the ring main created for this edge
  readonly hub?: string; // inproc only: the in-process hub the edge's instances share
}

/** The end of an edge names `instance`: exactly, or as "stage#*" for every instance of its stage. */
export function endMatches(end: string, instance: string): boolean {
  return end === instance || (end.endsWith('#*') && instance.startsWith(end.slice(0, -1)));
}

/** `instance` reads or writes the edge. */
export function edgeTouches(edge: EdgeBinding, instance: string): boolean {
  return endMatches(edge.from, instance) || endMatches(edge.to, instance);
}
