// Ingest's SUB sockets on libzmq's C API (native/bindings/relay/zmq_subscriber.cc): one call reads
// every queued engine message into caller-owned arrays, where zeromq.js creates a Promise per message
// and a Buffer per frame. The socket, its monitor and the ZAP handler live in the calling thread's own
// context. The addon links no libzmq: it binds to the one zeromq.js's addon carries, so zeromq is
// loaded first (in this thread too), and the process has a single libzmq.
import 'zeromq';
import type * as Binding from '../../binding';
import { relayAddon } from './addon';

const addon = relayAddon();

export type ZmqSubscriberOptions = Binding.ZmqSubscriberOptions;
export const ZmqSubscriber = addon.ZmqSubscriber;
export type ZmqSubscriber = Binding.ZmqSubscriber;
export const zmqRecord = addon.zmqRecord;
export const zmqEvents = addon.zmqEvents;
export const zmqAllowPeers = addon.zmqAllowPeers;
export const zmqForgetPeers = addon.zmqForgetPeers;
export const zmqOpenSockets = addon.zmqOpenSockets;
export const zmqLibrary = addon.zmqLibrary;
