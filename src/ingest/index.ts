export * from './types';
export { KvEventSubscriber, type SubscriberOptions } from './subscriber';
export { parseLiveMessage, parseReplayReply, encodeSequence, decodeSequence, END_SEQ } from './frames';
export { rankEndpoint } from './endpoints';
export { DecodeError } from './errors';
export { sourcesOf } from './sources';
