/** The tests' redis-server and Cluster: the bench's own (bench/redisServer.ts), which starts one when given none. */
export { freePort, RedisCluster, RedisServer, type RedisServerOptions } from '../../bench/redisServer.ts';
