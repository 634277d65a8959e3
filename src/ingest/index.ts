export * from './types';
export { KvEventSubscriber, type SubscriberOptions } from './subscriber';
export { decodeBatchPayload, decodeEvent, type DecodedBatch } from './decode';
export { parseLiveMessage, parseReplayReply, encodeSequence, decodeSequence, END_SEQ } from './frames';
export { engineHashToU64 } from './hash';
export { rankEndpoint } from './endpoints';
export { DecodeError } from './errors';
