// A host module for ingest threads in tests (ingest/threads/protocol.ts ThreadHost): every sink id is
// a recording sink on the thread, whose calls (batches and resets, in order) are posted to the main
// thread with the thread's id. The main thread may hold a sink ({ hold: id }: its bursts are not
// applied, each one's promise pending) and release it ({ release: id }).
import { threadId } from 'worker_threads';
import type { HostThread, ThreadHost } from '../../src/ingest/threads/protocol';
import type { PackedEngineEvents } from '../../src/ingest/types';
import { RecordingSink, type RecordedBatch } from './recording-sink';

/** What the host posts per call of a sink. */
export type PeerHostCall = { sink: number; threadId: number } & ({ kind: 'batch'; batch: RecordedBatch } | { kind: 'reset'; source: RecordedBatch['source']; reason: string });

/** What the main thread sends the host. */
export type PeerHostControl = { hold: number } | { release: number };

export function createHost(thread: HostThread): ThreadHost {
  const sinks = new Map<number, RecordingSink>();
  const held = new Map<number, { promise: Promise<void>; resolve(): void }>();
  const sinkOf = (id: number): RecordingSink => {
    let sink = sinks.get(id);
    if (sink) return sink;
    sink = new (class extends RecordingSink {
      override events(b: PackedEngineEvents): Promise<void> | void {
        const before = this.calls.length;
        super.events(b);
        for (const call of this.calls.slice(before)) thread.post({ sink: id, threadId, ...call } satisfies PeerHostCall);
        return held.get(id)?.promise;
      }
      override reset(source: RecordedBatch['source'], reason: Parameters<RecordingSink['reset']>[1]): void {
        thread.post({ sink: id, threadId, kind: 'reset', source, reason } satisfies PeerHostCall);
      }
    })();
    sinks.set(id, sink);
    return sink;
  };
  return {
    sink: sinkOf,
    receive(message) {
      const m = message as PeerHostControl;
      if ('hold' in m) {
        let resolve!: () => void;
        const promise = new Promise<void>((r) => (resolve = r));
        held.set(m.hold, { promise, resolve });
      } else {
        held.get(m.release)?.resolve();
        held.delete(m.release);
      }
    },
  };
}
