// `kv-dc-relay/discovery`: the etcd side a consumer or an engine sidecar may need — a worker's
// registration, and the relay shards' addresses for a ShardedRelayClient. Kept out of
// `kv-dc-relay/client` so that a router with static addresses never loads etcd3.
export { registerWorker, WorkerRegistration, type WorkerRegistrationEvents, type WorkerRegistrationOptions } from './register';
export { EtcdShardAddresses } from './shard-addresses';
