// The simulated engine's HTTP side: vLLM's /health and the Prometheus /metrics the relay scrapes
// for load (engine-inputs.md §1.7; relay-config.md "Load").
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RankGauges {
  kvCacheUsage: number;
  running: number;
  waiting: number;
}

export class EngineHttpServer {
  private readonly server: Server;
  healthStatus = 200;

  constructor(
    private readonly gauges: () => Map<number, RankGauges>,
    private readonly modelName: string,
  ) {
    this.server = createServer((req, res) => {
      if (req.url === '/health') {
        res.writeHead(this.healthStatus).end();
      } else if (req.url === '/metrics') {
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(this.metricsText());
      } else {
        res.writeHead(404).end();
      }
    });
  }

  async listen(host: string, port: number): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => resolve());
    });
    const addr = this.server.address() as AddressInfo;
    return `http://${host}:${addr.port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  metricsText(): string {
    const ranks = [...this.gauges().entries()].sort(([a], [b]) => a - b);
    const series = (name: string, help: string, pick: (g: RankGauges) => number): string =>
      [
        `# HELP ${name} ${help}`,
        `# TYPE ${name} gauge`,
        ...ranks.map(([rank, g]) => `${name}{engine="${rank}",model_name="${this.modelName}"} ${pick(g)}`),
      ].join('\n');
    return [
      series('vllm:num_requests_running', 'Number of requests in model execution batches.', (g) => g.running),
      series('vllm:num_requests_waiting', 'Number of requests waiting to be processed.', (g) => g.waiting),
      series('vllm:kv_cache_usage_perc', 'KV-cache usage. 1 means 100 percent usage.', (g) => g.kvCacheUsage),
    ].join('\n') + '\n';
  }
}
