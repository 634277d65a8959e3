// The process side of FaultyConsumers (faulty-consumers.ts): opens a group's streams over bare
// HTTP/2 sessions (one each), reports when they are in place, follows the parent's commands, and
// destroys the group's sessions when it leaves, ready for the next group.
import { rawCall, rawSession, type RawCall } from '../transport/raw-client';
import { subscriber } from '../transport/helpers';
import type { FaultyCommand, FaultyGroup, FaultyReport } from './faulty-consumers';

function report(message: FaultyReport): void {
  process.send!(message);
}

function open(group: FaultyGroup, id: string): RawCall<'FilterUpdate'> {
  return rawCall(rawSession(group.address), 'SubscribeKvPool', 'SubscribeKvPoolRequest', { ...subscriber(id), expectedProducer: group.producer }, 'FilterUpdate');
}

interface Joined {
  /** The never-readers and slow readers, in that order. */
  cut: RawCall<'FilterUpdate'>[];
  all: RawCall<'FilterUpdate'>[];
  slowReads: NodeJS.Timeout;
}

async function join(group: FaultyGroup): Promise<Joined> {
  const never = Array.from({ length: group.never }, (_, i) => open(group, `never-${group.tag}-${i}`));
  const slow = Array.from({ length: group.slow }, (_, i) => open(group, `slow-${group.tag}-${i}`));
  const slowReads = setInterval(() => slow.forEach((s) => s.stream.read(group.slowReadBytes)), group.slowReadMs);
  await Promise.all([...never, ...slow].map((s) => s.headers));
  const drops = Array.from({ length: group.drops }, (_, i) => open(group, `drop-${group.tag}-${i}`));
  await Promise.all(drops.map((d) => d.headers));
  drops.forEach((d) => d.stream.close(0x8)); // RST_STREAM CANCEL with the snapshot still being written
  return { cut: [...never, ...slow], all: [...never, ...slow, ...drops], slowReads };
}

let current: Joined | undefined;
process.on('message', (command: FaultyCommand) => {
  if (command.kind === 'join') {
    void join(command.group).then((joined) => {
      current = joined;
      report({ kind: 'joined' });
    });
  } else if (command.kind === 'stopReading') {
    clearInterval(current!.slowReads);
    report({ kind: 'stopped' });
  } else if (command.kind === 'finish') {
    const cut = current!.cut;
    for (const s of cut) s.resume();
    void Promise.all(cut.map((s) => s.end())).then((ends) => report({ kind: 'ended', ends: ends.map((e) => [e.code, e.reason]) }));
  } else {
    clearInterval(current!.slowReads);
    for (const call of current!.all) call.session.destroy();
    current = undefined;
    report({ kind: 'left' });
  }
});
