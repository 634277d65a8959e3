// Every metric the relay can register is documented in docs/operations.md: the registry is built
// with every optional part (transport, TLS, etcd discovery, the event loop, delta latency) and each
// name it holds must appear there, as must the alert expressions' metrics.
import * as fs from 'fs';
import * as path from 'path';
import { createRelayMetrics, DeltaLatencyMetrics, type MetricsProviders } from '../../src/metrics/registry';

const PAGE = path.resolve(__dirname, '..', '..', 'docs', 'operations.md');

/** Registration only asks which parts exist; no sampler runs until a scrape. */
const never = (): never => {
  throw new Error('not sampled in this test');
};

function everyRegisteredMetric(): string[] {
  const providers: Required<MetricsProviders> = {
    producer: never,
    discovery: never,
    dynamo: never,
    transport: never,
    tls: never,
    connections: never,
    eventLoop: never,
    deltaLatency: new DeltaLatencyMetrics(),
    diagnostics: never,
  };
  return createRelayMetrics(providers)
    .getMetricsAsArray()
    .map((m) => m.name)
    .sort();
}

test('every registered metric is documented in docs/operations.md', () => {
  const names = everyRegisteredMetric();
  expect(names.length).toBeGreaterThan(50);
  const page = fs.readFileSync(PAGE, 'utf8');
  expect(names.filter((name) => !page.includes(`\`${name}\``))).toEqual([]);
});

test('docs/operations.md documents no metric the relay does not register', () => {
  const names = new Set(everyRegisteredMetric());
  const documented = [...fs.readFileSync(PAGE, 'utf8').matchAll(/`(kv_dc_relay_[a-z_]+)`/g)].map((m) => m[1]);
  expect(documented.filter((name) => !names.has(name))).toEqual([]);
});
