/**
 * The transport's public face: the connector kinds (transport/kinds.ts) and what a process above the transport needs
 * to provision, open and use the edges of a graph. The engine imports transport/ through this file and Connector.ts
 * only (test/helpers/importGraph.ts enforces it), so a connector's internals can change without touching the engine.
 */
export {
  DEFAULT_RING_BYTES,
  REDIS_DEFAULTS,
  allConnectorKinds,
  connectorKinds,
  crossesHosts,
  kindEntry,
  redisOptionsOf,
  ringBytesOf,
  type ConnectorKindEntry,
  type ProvisionedEdges,
} from './kinds.ts';
export { createConnector, provisionEdges, sweepStaleTransports } from './createConnector.ts';
export {
  ChunkTransferAdapter,
  type Arrival,
  type ExpectOptions,
  type ReceivedChunk,
} from './adapter/ChunkTransferAdapter.ts';
export { edgeTouches, endMatches, type EdgeBinding } from './edges.ts';
export { EcRedis } from './redis/EcRedis.ts';
export type { RedisConnectorOptions } from './redis/RedisConnector.ts';
