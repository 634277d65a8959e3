// The /metrics view of a Dynamo deployment's discovery and event plane.
import type { DynamoMetrics } from '../metrics/registry';
import type { DynamoDiscovery } from './discovery/watch';
import type { EventPlane } from './event-plane/plane';

export function dynamoMetrics(discovery: DynamoDiscovery, plane: EventPlane): () => DynamoMetrics {
  return () => {
    const d = discovery.metrics();
    const p = plane.metrics();
    return {
      discoveryStale: d.stale,
      rejectedEntries: d.rejectedEntries,
      conflicts: d.conflicts,
      endpoints: d.endpoints,
      workers: d.workers,
      unboundEndpoints: d.unboundEndpoints,
      eventSources: d.eventSources,
      natsConnected: p.natsConnected,
      natsReconnects: p.natsReconnects,
      channels: { nats: p.subjects, jetstream: p.streams, zmq: p.zmqPublishers },
      messages: p.messages,
      malformed: p.malformed,
      otherTopic: p.otherTopic,
      unknownWorker: p.unknownWorker,
      duplicates: p.duplicates,
      gaps: p.gaps,
      loadFaults: p.loadFaults,
    };
  };
}
