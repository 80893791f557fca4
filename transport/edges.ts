/** How a process finds its peers: every edge it reads or writes, as main provisioned it. */
export interface EdgeBinding {
  readonly from: string; // instance id, e.g. "thinker#0" or "main"
  readonly to: string;
  readonly connector: string; // connector name in the graph
  readonly ringName?: string; // shm only: the ring main created for this edge
  readonly hub?: string; // inproc only: the in-process hub the edge's instances share
}
