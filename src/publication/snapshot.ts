// Encodes one pool image into shared snapshot-chunk frames, off the event loop.
import { FilterUpdateKind } from '../wire/enums';
import type { RelayIdentity } from '../wire/types';
import { encodeSnapshotAsync } from '../native';
import { SharedFrame } from './frames';
import type { PoolFeed, PoolImage } from './source';

export async function encodeSnapshotFrames(relay: RelayIdentity, feed: PoolFeed, image: PoolImage): Promise<SharedFrame[]> {
  const format = feed.producer.ckfFormat;
  if (!format) throw new Error('producer identity has no ckf_format');
  const chunks = await encodeSnapshotAsync(format, feed.dcId, image.sequence, image.words);
  return chunks.map(
    (payload) => new SharedFrame(relay, feed.producer, FilterUpdateKind.SNAPSHOT_CHUNK, image.sequence, image.sequence, payload),
  );
}
