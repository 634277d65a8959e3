// `npm run sim:multidc [-- --requests N --interval-ms MS --seed N --out DIR]`: runs every scenario
// (four policies at 1 ms WAN, KV-aware at 20 and 100 ms, KV-aware with one DC's relay stopped
// mid-run), prints the table and writes multidc.md, multidc.svg and multidc.json into DIR.
import * as fs from 'fs';
import * as path from 'path';
import { parseArgs } from 'util';
import { DEFAULT_CLUSTER, DEFAULT_RELAY_DOWN_AT, DEFAULT_RUN, DEFAULT_WORKLOAD, LAG_SWEEP_MS } from './options';
import { downNotes, markdownTable, scenarioLabel, svgPlot } from './report';
import { runScenario, type ScenarioResult, type ScenarioSpec } from './scenario';

const DEFAULT_OUT = path.join('examples', 'global-router', 'results');

export function scenarios(): ScenarioSpec[] {
  const [base, ...lags] = LAG_SWEEP_MS;
  return [
    ...(['kv-aware', 'load-only', 'random', 'round-robin'] as const).map((policy) => ({ name: `${policy}-${base}ms`, policy, run: { wanDelayMs: base } })),
    ...lags.map((wanDelayMs) => ({ name: `kv-aware-${wanDelayMs}ms`, policy: 'kv-aware' as const, run: { wanDelayMs } })),
    { name: 'kv-aware-relay-down', policy: 'kv-aware', run: { wanDelayMs: base, relayDownAt: DEFAULT_RELAY_DOWN_AT } },
  ];
}

function positiveInt(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${flag} must be a positive integer`);
  return n;
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { requests: { type: 'string' }, 'interval-ms': { type: 'string' }, seed: { type: 'string' }, out: { type: 'string' } },
  });
  const requests = positiveInt('--requests', values.requests) ?? DEFAULT_RUN.requests;
  const intervalMs = positiveInt('--interval-ms', values['interval-ms']) ?? DEFAULT_RUN.intervalMs;
  const seed = positiveInt('--seed', values.seed) ?? DEFAULT_WORKLOAD.seed;
  const out = values.out ?? DEFAULT_OUT;
  const results: ScenarioResult[] = [];
  for (const spec of scenarios()) {
    const started = Date.now();
    const result = await runScenario({ ...spec, run: { ...spec.run, requests, intervalMs }, workload: { seed } });
    process.stderr.write(`${scenarioLabel(result)}: hit ${(100 * result.hitRate).toFixed(1)} %, balance ${result.balance.toFixed(2)} (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
    results.push(result);
  }
  const c = DEFAULT_CLUSTER;
  const setup =
    `${c.dcs} DCs × ${c.ranksPerDc} ranks × ${c.capacityBlocks} blocks of ${c.blockSize} tokens; ${requests} requests, ` +
    `mean gap ${intervalMs} ms, first ${100 * DEFAULT_RUN.warmup} % not measured; workload seed ${seed}`;
  const table = markdownTable(results);
  const notes = downNotes(results);
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(
    path.join(out, 'multidc.md'),
    `# Multi-DC simulation\n\n\`npm run sim:multidc -- --requests ${requests} --interval-ms ${intervalMs} --seed ${seed}\`\n\n${setup}.\n\n${table}\n${notes}\n\n![plot](multidc.svg)\n`,
  );
  fs.writeFileSync(path.join(out, 'multidc.svg'), svgPlot(results, setup));
  fs.writeFileSync(path.join(out, 'multidc.json'), `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`${setup}\n\n${table}\n${notes}\n\nwritten to ${out}/multidc.{md,svg,json}\n`);
  return 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: Error) => {
      process.stderr.write(`sim:multidc: ${err.stack ?? err.message}\n`);
      process.exit(1);
    },
  );
}
