// A firehose in a process of its own, so a bench can keep its own event loop free while engines
// send as fast as they can:
//   node firehose-host.js SOURCES SEED   logs {"endpoints":[...]} on stderr once bound; a line on
//   stdin starts sending; SIGTERM stops and exits.
import { Firehose, FIREHOSE_MESSAGES, publishers } from './firehose';
import { vllmBatches } from './vllm-batches';

async function main(sources: number, seed: number): Promise<void> {
  const pubs = await publishers(sources);
  const firehose = new Firehose(
    pubs,
    pubs.map((_, s) => vllmBatches(seed + s, FIREHOSE_MESSAGES).payloads),
  );
  process.stdin.once('data', () => firehose.start());
  process.once('SIGTERM', () => {
    void firehose.stop().then(() => {
      for (const p of pubs) p.close();
      process.exit(0);
    });
  });
  process.stderr.write(`${JSON.stringify({ endpoints: pubs.map((p) => p.lastEndpoint) })}\n`);
}

if (require.main === module) {
  main(Number(process.argv[2]), Number(process.argv[3])).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
