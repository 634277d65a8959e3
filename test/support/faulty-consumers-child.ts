// The process side of FaultyConsumers (faulty-consumers.ts): opens the plan's streams over bare
// HTTP/2 sessions (one each), reports when they are in place, and follows the parent's commands.
import { rawCall, rawSession, type RawCall } from '../transport/raw-client';
import { subscriber } from '../transport/helpers';
import type { FaultyCommand, FaultyPlan, FaultyReport } from './faulty-consumers';

function report(message: FaultyReport): void {
  process.send!(message);
}

function open(plan: FaultyPlan, id: string): RawCall<'FilterUpdate'> {
  return rawCall(rawSession(plan.address), 'SubscribeKvPool', 'SubscribeKvPoolRequest', { ...subscriber(id), expectedProducer: plan.producer }, 'FilterUpdate');
}

async function run(plan: FaultyPlan): Promise<void> {
  const never = Array.from({ length: plan.never }, (_, i) => open(plan, `never-${plan.tag}-${i}`));
  const slow = Array.from({ length: plan.slow }, (_, i) => open(plan, `slow-${plan.tag}-${i}`));
  const slowReads = setInterval(() => slow.forEach((s) => s.stream.read(plan.slowReadBytes)), plan.slowReadMs);
  await Promise.all([...never, ...slow].map((s) => s.headers));
  const drops = Array.from({ length: plan.drops }, (_, i) => open(plan, `drop-${plan.tag}-${i}`));
  await Promise.all(drops.map((d) => d.headers));
  drops.forEach((d) => d.stream.close(0x8)); // RST_STREAM CANCEL with the snapshot still being written
  process.on('message', (command: FaultyCommand) => {
    if (command.kind === 'stopReading') {
      clearInterval(slowReads);
      report({ kind: 'stopped' });
    } else {
      const cut = [...never, ...slow];
      for (const s of cut) s.resume();
      void Promise.all(cut.map((s) => s.end())).then((ends) => report({ kind: 'ended', ends: ends.map((e) => [e.code, e.reason]) }));
    }
  });
  report({ kind: 'joined' });
}

process.once('message', (plan: FaultyPlan) => void run(plan));
