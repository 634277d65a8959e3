// PrefixMirror's full read against a real etcd: more under the prefix than one gRPC response may
// carry (grpc-js refuses a message over 4 MiB) is read in pages at one revision. Before, the one
// Range response was refused and the read retried forever: a relay started on such a deployment
// never served it.
import { randomBytes } from 'crypto';
import { PassThrough } from 'stream';
import { Etcd3 } from 'etcd3';
import { createEtcdClient } from '../../src/discovery/etcd-client';
import { PrefixMirror } from '../../src/discovery/mirror';
import { createLogger } from '../../src/log';
import { describeWithEtcd, EtcdServer } from '../support/etcd';
import { waitFor } from '../support/waitFor';

const PREFIX = 'mirror-test/';
const BIG_VALUES = 6; // 6 MiB in all: over the 4 MiB a single response may carry
const SMALL_VALUES = 300; // more keys than one page

describeWithEtcd('PrefixMirror full read', () => {
  let etcd: EtcdServer;
  let kv: Etcd3;
  beforeAll(async () => {
    etcd = await new EtcdServer().start();
    kv = new Etcd3({ hosts: etcd.endpoint });
  });
  afterAll(async () => {
    kv.close();
    await etcd.stop();
  });

  test('reads every key under the prefix when they are over 4 MiB in all and span pages, then follows the watch', async () => {
    const expected = new Map<string, string>();
    for (let i = 0; i < BIG_VALUES; i++) {
      const value = randomBytes(768 * 1024).toString('base64'); // 1 MiB of text
      await kv.put(`${PREFIX}big/${i}`).value(value);
      expected.set(`big/${i}`, value);
    }
    for (let i = 0; i < SMALL_VALUES; i++) {
      await kv.put(`${PREFIX}small/${String(i).padStart(4, '0')}`).value(`v${i}`);
      expected.set(`small/${String(i).padStart(4, '0')}`, `v${i}`);
    }
    // Just outside the prefix on both sides (keys are compared as bytes).
    await kv.put('mirror-test.').value('outside');
    await kv.put('mirror-test0').value('outside');
    const revision = BigInt((await kv.get('any').exec()).header.revision);

    const log = new PassThrough();
    const lines: string[] = [];
    log.on('data', (b: Buffer) => lines.push(...b.toString().split('\n').filter(Boolean)));
    const client = createEtcdClient({ endpoints: [etcd.endpoint] });
    const mirror = new PrefixMirror(client, PREFIX, createLogger({ destination: log, level: 'info' }));
    try {
      let started = false;
      void mirror.start().then(() => (started = true));
      await waitFor(() => started || lines.some((l) => l.includes('etcd is unreachable')), 'the first read, or its failure', 20_000);
      // A refused read logs "etcd is unreachable; retrying" (RESOURCE_EXHAUSTED) and never starts.
      expect(lines.filter((l) => l.includes('etcd is unreachable'))).toEqual([]);
      expect(started).toBe(true);
      expect(mirror.stale).toBe(false);
      expect(mirror.revision).toBe(revision);
      expect(mirror.entries.size).toBe(expected.size);
      for (const [key, value] of expected) expect(mirror.entries.get(key)).toBe(value);

      // The watch resumes from the read's revision.
      await kv.put(`${PREFIX}after`).value('x');
      await waitFor(() => mirror.entries.get('after') === 'x', 'the watched put');
    } finally {
      mirror.close();
      client.close();
    }
  });
});
