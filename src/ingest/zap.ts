// Peer allow-lists of bound KV-event sockets, enforced by a ZAP handler (ZMQ RFC 27) in the native
// context of the calling thread (native/bindings/relay/zmq_subscriber.cc): libzmq asks it about every connection of a
// socket with a zapDomain, before the handshake completes, so a refused peer never delivers a message.
import { INGEST_MAX_ZMQ_SOCKETS } from '../config/defaults';
import { zmqAllowPeers, zmqForgetPeers } from '../native/zmq-subscriber';
import { canonicalPeerAddress } from './peer-address';

let nextDomain = 0;

/** Registers an allow-list of peer IP addresses under a fresh domain; returns the domain and its release. */
export function allowPeers(peers: readonly string[]): { domain: string; release(): void } {
  const domain = `kv-dc-relay-kv-events-${++nextDomain}`;
  zmqAllowPeers(domain, peers.map(canonicalPeerAddress), INGEST_MAX_ZMQ_SOCKETS);
  return { domain, release: () => zmqForgetPeers(domain) };
}
