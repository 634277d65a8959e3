// `kv-dc-relay/wire`: the wire layer of dynamo.kvrelay.v1: schema types, enums, constants, codec, grpc-js glue,
// validators, ProducerKey and error reasons.
export * from './constants';
export * from './enums';
export type * from './types';
export * from './codec';
export * from './proto';
export * from './service';
export * from './errors';
export * from './validate';
export * from './producer-key';
export * from './text';
export type { PlaneValidation, Quarantined } from './plane';
