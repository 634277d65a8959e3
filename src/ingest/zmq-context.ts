// The zeromq.js context of ingest's replay DEALERs (the SUB sockets and the ZAP handler are native:
// native/bindings/relay/zmq_subscriber.cc). zeromq.js's global context is shared by every module in
// the process and libzmq fixes its socket limit (1023 by default) when its first socket is created, so raising the
// limit there only works if nothing opened a socket before ingest was loaded. A context of our own
// gets the limit for certain; it is one per module instance, so one per ingest thread.
import { Context } from 'zeromq';
import { INGEST_MAX_ZMQ_SOCKETS } from '../config/defaults';

let shared: Context | undefined;

/** The context of ingest's replay dealers. */
export function ingestContext(): Context {
  // Not blocky: a thread or process that ends with a socket still open must not wait on it.
  return (shared ??= new Context({ maxSockets: INGEST_MAX_ZMQ_SOCKETS, blocky: false }));
}
