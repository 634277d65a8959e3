// The shipped alert rules and dashboard against real Prometheus: promtool checks the rules and runs
// their unit tests; then a Prometheus (from its binary, scraping every second) scrapes a running
// relay — TLS, etcd discovery, a simulated engine, consumers — and every alert expression (each side
// of its comparison) and every dashboard query returns series, and every rule evaluates healthily.
import * as fs from 'fs';
import * as path from 'path';
import { Etcd3 } from 'etcd3';
import * as YAML from 'yaml';
import { RelayClient } from '../../src/client';
import { endpointKey } from '../../src/discovery/keys';
import { registerWorker, type WorkerRegistration } from '../../src/discovery/register';
import { silentLogger } from '../../src/log';
import { startRelay, type RunningRelay } from '../../src/server';
import { SimulatedEngine } from '../../src/sim';
import { CertificateFactory } from '../support/certificates';
import { ROOT } from '../support/cli-process';
import { describeWithEtcd, EtcdServer } from '../support/etcd';
import { describeWithPrometheus, promtool, PrometheusServer } from '../support/prometheus-server';
import { BS, endpointConfig, relayConfig, workerConfig } from '../support/relay-config';
import { waitFor } from '../support/waitFor';

const RULES = path.join(ROOT, 'deploy', 'prometheus', 'kv-dc-relay.rules.yml');
const RULE_TESTS = path.join(ROOT, 'deploy', 'prometheus', 'tests', 'kv-dc-relay.rules.test.yml');
const DASHBOARD = path.join(ROOT, 'deploy', 'grafana', 'kv-dc-relay.json');

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: { severity: string };
  annotations: { summary: string; description: string };
}
const rules = (YAML.parse(fs.readFileSync(RULES, 'utf8')) as { groups: { name: string; rules: Rule[] }[] }).groups.flatMap((g) => g.rules);

interface Panel {
  type: string;
  title: string;
  targets?: { expr: string }[];
}
const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[]; templating: { list: { name: string }[] } };
/** Every dashboard query, with its variables as Grafana fills them for "All" over the last minutes. */
const dashboardQueries = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr.replace(/\$instance/g, '.*').replace(/\$__rate_interval/g, '1m') })));

/** The two sides of an expression's top-level comparison (the expression itself when it has none). */
function comparisonSides(expr: string): string[] {
  let depth = 0;
  let quoted = false;
  for (let i = 0; i < expr.length; i++) {
    const c = expr[i];
    if (c === '"') quoted = !quoted;
    if (quoted) continue;
    if ('([{'.includes(c)) depth += 1;
    else if (')]}'.includes(c)) depth -= 1;
    else if (depth === 0) {
      const op = /^(==|!=|>=|<=|>|<)/.exec(expr.slice(i))?.[1];
      if (op) return [expr.slice(0, i).trim(), expr.slice(i + op.length).trim()];
    }
  }
  return [expr.trim()];
}

const isNumber = (side: string): boolean => /^[\d\s.*+\-/()e]+$/.test(side);

describeWithPrometheus('alert rules and dashboard', () => {
  test('promtool: the rules are valid and their unit tests pass; every alert has a unit test where it fires', () => {
    const check = promtool(['check', 'rules', RULES]);
    expect(check.output).toContain(`SUCCESS: ${rules.length} rules found`);
    expect(check.status).toBe(0);
    const unit = promtool(['test', 'rules', RULE_TESTS]);
    expect(unit.output).toContain('SUCCESS');
    expect(unit.status).toBe(0);
    const tests = (YAML.parse(fs.readFileSync(RULE_TESTS, 'utf8')) as { tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[] }).tests;
    const fired = new Set(tests.flatMap((t) => t.alert_rule_test.filter((c) => c.exp_alerts.length > 0).map((c) => c.alertname)));
    expect(rules.map((r) => r.alert).filter((a) => !fired.has(a))).toEqual([]);
    for (const r of rules) {
      expect(['page', 'ticket', 'info']).toContain(r.labels.severity);
      expect(r.annotations.summary.length).toBeGreaterThan(0);
      expect(r.annotations.description.length).toBeGreaterThan(0);
    }
  });

  test('comparisonSides splits at the top-level comparison only', () => {
    expect(comparisonSides('increase(x[10m]) > 0')).toEqual(['increase(x[10m])', '0']);
    expect(comparisonSides('a{check="x>y"} == 1')).toEqual(['a{check="x>y"}', '1']);
    expect(comparisonSides('sum without (instance) (a) < max(b)')).toEqual(['sum without (instance) (a)', 'max(b)']);
    expect(comparisonSides('sum(rate(a{b=~"c"}[1m]))')).toEqual(['sum(rate(a{b=~"c"}[1m]))']);
  });

  describeWithEtcd('a real Prometheus scraping a running relay (with etcd discovery)', () => {
    const PREFIX = 'kv-dc-relay/prometheus-test/';
    const TRIPLE = { namespace: 'prod', component: 'backend', endpoint: 'generate' };
    const certs = new CertificateFactory();
    let etcd: EtcdServer;
    let kv: Etcd3;
    let engine: SimulatedEngine;
    let registration: WorkerRegistration;
    let relay: RunningRelay;
    const consumers: RelayClient[] = [];
    let prometheus: PrometheusServer;

    beforeAll(async () => {
      const ca = certs.ca('ca');
      const server = certs.server('relay', ca);
      etcd = await new EtcdServer().start();
      kv = new Etcd3({ hosts: etcd.endpoint });
      engine = await new SimulatedEngine({ modelName: 'llama', workload: { blockSize: BS } }).start();
      await kv.put(endpointKey(PREFIX, TRIPLE)).value(JSON.stringify(endpointConfig([])));
      registration = await registerWorker({ etcd: { endpoints: [etcd.endpoint] }, prefix: PREFIX, endpoint: TRIPLE, worker: workerConfig(7, engine, { health: true, metrics: true }) });
      const file = path.join(certs.dir, 'relay.json');
      fs.writeFileSync(
        file,
        JSON.stringify(
          relayConfig([], {
            tls: { cert: server.cert, key: server.key },
            discovery: { etcd: { endpoints: [etcd.endpoint], prefix: PREFIX } },
            // The second consumer's serving-load stream is refused: the limit counter has a series.
            limits: { maxServingLoadSubscribers: 1 },
          }),
        ),
      );
      relay = await startRelay({ configFile: file, logger: silentLogger });
      await engine.waitForSubscribers();
      engine.startWorkload(20);
      for (const id of ['prom-test-a', 'prom-test-b']) {
        const consumer = new RelayClient(relay.address, { subscriberId: id, tls: { ca: fs.readFileSync(ca.cert) } });
        consumer.start();
        consumers.push(consumer);
      }
      prometheus = await new PrometheusServer().start([relay.metricsAddress!], [RULES]);
    }, 60_000);

    afterAll(async () => {
      for (const c of consumers) c.close();
      engine?.stopWorkload();
      await prometheus?.stop();
      await relay?.shutdown();
      await registration?.close();
      await engine?.stop();
      kv?.close();
      await etcd?.stop();
      certs.remove();
    });

    test('every alert expression and every dashboard query returns series; every rule evaluates', async () => {
      // Deltas flow to the consumers (the latency histograms fill), and Prometheus has scraped enough
      // samples for the rate windows.
      await waitFor(() => consumers.some((c) => (c.replica(c.catalog()?.pools[0]?.poolKey ?? '')?.sequence ?? 0n) > 0n), 'deltas at a consumer', 15_000);
      await waitFor(async () => (await prometheus.query('count_over_time(kv_dc_relay_pool_delta_latency_seconds_count[1m]) >= 4')).length > 0, 'four scrapes with deltas', 30_000, 250);

      const empty: string[] = [];
      for (const rule of rules) {
        for (const side of comparisonSides(rule.expr).filter((s) => !isNumber(s))) {
          if ((await prometheus.query(side)).length === 0) empty.push(`${rule.alert}: ${side}`);
        }
      }
      for (const q of dashboardQueries) if ((await prometheus.query(q.expr)).length === 0) empty.push(`panel ${q.panel}: ${q.expr}`);
      expect(empty).toEqual([]);
      expect(dashboardQueries.length).toBeGreaterThan(30);

      // Every rule was evaluated (Prometheus evaluates every second) without an error.
      await waitFor(async () => (await prometheus.rules()).flatMap((g) => g.rules).every((r) => r.health === 'ok'), 'every rule evaluated', 10_000, 250);
      const evaluated = (await prometheus.rules()).flatMap((g) => g.rules);
      expect(evaluated.map((r) => r.name).sort()).toEqual(rules.map((r) => r.alert).sort());
    }, 60_000);
  });
});
