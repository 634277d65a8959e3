// Ingest's SUB sockets on libzmq's C API (native/zmq_ingest.cc): one call reads every queued engine
// message into caller-owned arrays, where zeromq.js creates a Promise per message and a Buffer per
// frame. The socket, its monitor and the ZAP handler live in the calling thread's own context.
import type * as Binding from '../../binding';
import { addon } from './addon';

export type ZmqSubscriberOptions = Binding.ZmqSubscriberOptions;
export const ZmqSubscriber = addon.ZmqSubscriber;
export type ZmqSubscriber = Binding.ZmqSubscriber;
export const zmqRecord = addon.zmqRecord;
export const zmqEvents = addon.zmqEvents;
export const zmqAllowPeers = addon.zmqAllowPeers;
export const zmqForgetPeers = addon.zmqForgetPeers;
export const zmqOpenSockets = addon.zmqOpenSockets;
