// The `kv-dc-relay` command line on commander: every command, its options and help in one place.
// An action loads its implementation only when it runs, so `--help`, `query` and `watch` never load
// the relay's addon, ZMQ or etcd code. Options are kebab-case; every command takes --help; errors
// are one line; exit codes are EXIT's (0 ok, 1 runtime failure, 2 usage or config error).
import { Command, Option } from 'commander';
import * as fs from 'fs';
import * as path from 'path';
import { DEFAULT_BIND, QUERY_TIMEOUT_MS, STATUS_TIMEOUT_MS } from '../config/defaults';
import { MAX_ETCD_LEASE_TTL_S, MIN_ETCD_LEASE_TTL_S } from '../config/limits';
import { packageRoot } from '../native/addon';
import type { CliIo } from './io';
import { EXIT, integerOption } from './usage';

const EXIT_CODES_HELP = `
Exit codes:
  ${EXIT.ok}  ok: answered, or stopped by SIGINT/SIGTERM
  ${EXIT.failure}  runtime failure: relay unreachable, port in use, native addon not loadable
  ${EXIT.usage}  usage or config error: nothing was started`;

/** The package's version (package.json beside dist/ or the sources). */
export function packageVersion(): string {
  return (JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

const TLS_CLIENT_OPTIONS = [
  new Option('--tls', 'connect with TLS (system CAs unless --tls-ca)'),
  new Option('--tls-ca <file>', 'CA bundle to verify the relay (turns TLS on)'),
  new Option('--tls-cert <file>', 'client certificate for mTLS (with --tls-key)'),
  new Option('--tls-key <file>', 'client private key for mTLS (with --tls-cert)'),
  new Option('--tls-servername <name>', 'name to verify the relay certificate against'),
];

function withClientTls(command: Command): Command {
  for (const option of TLS_CLIENT_OPTIONS) command.addOption(option);
  return command;
}

/**
 * The program, writing to `io`; `finish(code)` receives each action's exit code. Commander's own
 * errors (unknown option, missing argument) and --help/--version arrive as CommanderError (main.ts).
 */
export function buildProgram(io: CliIo, finish: (code: number) => void): Command {
  const program = new Command('kv-dc-relay')
    .description('KV DC Relay: publishes local inference engines\' KV-cache state, topology and load as dynamo.kvrelay.v1.KvEventRelay gRPC streams')
    .version(packageVersion(), '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help for a command')
    .helpCommand('help [command]', 'show help for a command')
    .addHelpText('after', EXIT_CODES_HELP)
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      // One line: "kv-dc-relay query: unknown option '--bogus' (see kv-dc-relay query --help)".
      outputError: () => undefined,
    });
  const run = (code: Promise<number>) => code.then(finish);

  program
    .command('serve')
    .description('run a relay: JSON-lines logs on stderr, {"msg":"listening"} once the gRPC listener is bound')
    .requiredOption('--config <file>', 'relay config (YAML or JSON); its endpoints are watched and reloaded live')
    .option('--bind <host:port>', `gRPC listen address (overrides the file; default ${DEFAULT_BIND}; port 0 picks one)`)
    .option('--dc-id <id>', 'data center id (overrides the file)')
    .option('--tls-cert <file>', 'server certificate (turns TLS on, with --tls-key)')
    .option('--tls-key <file>', 'server private key')
    .option('--tls-ca <file>', 'CA bundle to verify client certificates')
    .option('--tls-require-client-cert', 'require and verify client certificates (mTLS)')
    .option('--dynamo-etcd <host:port,...>', "read a Dynamo deployment from its etcd (v1/ cards, instances, event channels): discovery.dynamo.etcd.endpoints")
    .option('--dynamo-nats <nats://host:port,...>', "the Dynamo deployment's NATS (event plane, JetStream): discovery.dynamo.nats.servers")
    .option('--dynamo-namespaces <ns,...>', 'Dynamo namespaces to serve (default: all): discovery.dynamo.namespaces')
    .action(async (flags) => run((await import('./serve')).runServe(flags, io)));

  program
    .command('demo')
    .description('an embedded demo: a relay on 127.0.0.1:5561 fed by simulated engines, with the live watch view')
    .option('--bind <host:port>', 'relay listen address', '127.0.0.1:5561')
    .option('--json', 'print JSON lines instead of the terminal view')
    .option('--keep', 'keep the temporary folder (config, log, prompt) after the demo stops')
    .action(async (flags) => run((await import('./demo')).runDemo(flags, io)));

  program
    .command('sim-engine')
    .description('a simulated vLLM engine: KV events on ZMQ, /health and /metrics; prints its relay config entry')
    .option('--host <ip>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'KV event PUB port of the first data-parallel rank (rank r on port + r; 0 picks one)', integerOption(0, 65_535), 5557)
    .option('--replay-port <port>', 'serve replay requests on this ROUTER port (rank r on port + r)', integerOption(0, 65_535))
    .option('--http-port <port>', '/health and /metrics port (0 picks one)', integerOption(0, 65_535), 8000)
    .option('--block-size <tokens>', 'KV block size in tokens', integerOption(1, 1 << 16), 16)
    .option('--rate <batches>', 'KV event batches published per second', integerOption(1, 100_000), 20)
    .option('--seed <n>', 'workload seed (same seed, same events)', integerOption(0, 2 ** 31 - 1), 1)
    .option('--dp-size <n>', 'data-parallel ranks', integerOption(1, 64), 1)
    .option('--capacity-blocks <n>', 'KV cache capacity per rank, in blocks', integerOption(1, 1 << 24), 512)
    .option('--topic <topic>', 'ZMQ topic of the KV event messages', '')
    .option('--lora <name...>', 'LoRA adapters some conversations use', [] as string[])
    .option('--worker-id <id>', 'worker id in the printed config entry', integerOption(0), 1)
    .option('--print-prompt', 'print the token ids of a prompt whose prefix the engine will cache (for query), and exit')
    .action(async (flags) => run((await import('./sim-engine')).runSimEngine(flags, io)));

  withClientTls(
    program
      .command('watch')
      .description('a live consumer view of a relay (terminal screen, or JSON lines when piped or with --json)')
      .argument('<relay>', 'HOST:PORT of the relay')
      .option('--json', 'one JSON line per change, even on a terminal')
      .option('--subscriber-id <id>', 'subscriber id sent to the relay', 'kv-dc-relay-watch')
      .option('--timeout-ms <ms>', 'say on stderr when no catalog arrived this long after start (with the cause)', integerOption(1), QUERY_TIMEOUT_MS),
  ).action(async (address: string, flags) => run((await import('./watch')).runWatchCommand(address, flags, io)));

  withClientTls(
    program
      .command('query')
      .description('matched prefix depth per pool of a model for a prompt, with readiness and load')
      .argument('[relays]', 'HOST:PORT of the relay, or of its shards comma-separated; or use --etcd with --prefix')
      .requiredOption('--model <name>', 'model name, alias or served LoRA name')
      .option('--tokens <ids>', 'token ids: 1,2,3 or a JSON array')
      .option('--tokens-file <file>', 'a file holding the token ids')
      .option('--lora <name>', 'LoRA adapter the prompt runs with')
      .option('--json', 'print the answer as JSON')
      .option('--timeout-ms <ms>', 'how long to wait for the answer', integerOption(1), QUERY_TIMEOUT_MS)
      .option('--subscriber-id <id>', 'subscriber id sent to the relay', 'kv-dc-relay-query')
      .option('--etcd <host:port,...>', 'find the relay shards in etcd (with --prefix)')
      .option('--prefix <prefix>', 'etcd key prefix of the relay shards'),
  ).action(async (addresses: string | undefined, flags) => run((await import('./query')).runQuery(addresses, flags, io)));

  program
    .command('status')
    .description("a relay's status: per source its connection, last sequence, last event, gaps, resets and drops; per pool its blocks, filter load, subscribers and delta p99; its warnings")
    .argument('<relay>', "HOST:PORT of the relay's metrics listener (metricsBind), whose /status it reads")
    .option('--json', 'print the status document (JSON) instead of tables')
    .option('--timeout-ms <ms>', 'how long to wait for the answer', integerOption(1), STATUS_TIMEOUT_MS)
    .action(async (address: string, flags) => run((await import('./status')).runStatus(address, flags, io)));

  program
    .command('register')
    .description("an engine sidecar: registers its worker in etcd under a lease kept alive until SIGINT/SIGTERM")
    .option('--config <file>', 'a relay config whose discovery.etcd says where')
    .option('--etcd <host:port,...>', 'etcd endpoints (with --prefix)')
    .option('--prefix <prefix>', 'etcd key prefix of the deployment')
    .requiredOption('--namespace <ns>', 'endpoint namespace')
    .requiredOption('--component <c>', 'endpoint component')
    .requiredOption('--endpoint <e>', 'endpoint name')
    .requiredOption('--worker <json|@file>', 'the worker entry (relay-config.md), inline JSON or @FILE')
    .option('--ttl <seconds>', 'lease TTL', integerOption(MIN_ETCD_LEASE_TTL_S, MAX_ETCD_LEASE_TTL_S))
    .action(async (flags) => run((await import('./register')).runRegister(flags, io)));

  for (const command of program.commands) {
    command.exitOverride().showSuggestionAfterError(true).configureOutput(program.configureOutput()).addHelpText('after', EXIT_CODES_HELP);
  }
  return program;
}
