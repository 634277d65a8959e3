// The KvEventRelay handlers: thin adapters from grpc-js calls to the publication service.
import type * as grpc from '@grpc/grpc-js';
import { checkMarker } from '../publication/admission';
import { relayInfoMessage } from '../publication/frames';
import type { Publication } from '../publication/service';
import type { KvEventRelayHandlers } from '../wire/service';
import type { RelayIdentity } from '../wire/types';
import { grpcSink } from './grpc-sink';

export function relayHandlers(publication: Publication, relay: RelayIdentity): KvEventRelayHandlers {
  const info = relayInfoMessage(relay);
  return {
    getRelayInfo(call, callback) {
      const error = checkMarker(call.request.contractMarker);
      if (error) callback(error.toGrpcStatus() as grpc.ServiceError);
      else callback(null, info);
    },
    watchKvPoolCatalog(call) {
      publication.watchCatalog(call.request, grpcSink(call));
    },
    subscribeKvPool(call) {
      void publication.subscribePool(call.request, grpcSink(call));
    },
    subscribeServingReadiness(call) {
      publication.subscribeReadiness(call.request, grpcSink(call));
    },
    subscribeKvPoolLoad(call) {
      publication.subscribePoolLoad(call.request, grpcSink(call));
    },
    subscribeServingLoad(call) {
      publication.subscribeServingLoad(call.request, grpcSink(call));
    },
  };
}
