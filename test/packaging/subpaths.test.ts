// The package's entry points as a user imports them by name from the packed tarball: each subpath
// loads only its part (a router's `kv-dc-relay/client` loads nothing beyond an allowlist of this
// package's modules and of dependencies: no server code, zeromq or etcd3), and
// each type-checks from a TypeScript project with moduleResolution node16, bundler and node10.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { DEFAULT_CKF_SEED } from '../../src/config/defaults';
import { ckfPrepare, saltSeed, sequenceHashes } from '../../src/native/hashing';
import type { RelayServer } from '../../src/transport/server';
import { startRelay } from '../client/helpers';
import { TestSource, testProducer } from '../support/test-source';
import { installStagedPackage, ROOT, tsc } from './staged-package';

const SUBPATHS = ['kv-dc-relay', 'kv-dc-relay/client', 'kv-dc-relay/server', 'kv-dc-relay/discovery', 'kv-dc-relay/native', 'kv-dc-relay/wire'];

/** In a fresh node process in `host`: requires `specifier`, returns its export names and the loaded files. */
function loadIn(host: string, specifier: string): { exports: string[]; loaded: string[] } {
  const script = `const m = require(${JSON.stringify(specifier)});
process.stdout.write(JSON.stringify({ exports: Object.keys(m), loaded: Object.keys(require.cache) }));`;
  const result = spawnSync(process.execPath, ['-e', script], { cwd: host, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`require(${specifier}) failed:\n${result.stderr}`);
  return JSON.parse(result.stdout) as { exports: string[]; loaded: string[] };
}

/**
 * What `kv-dc-relay/client` may load of this package, relative to the installed package: the
 * consumer library, the wire layer, the core addon's wrappers (prompt hashing, CBI1), the tunables
 * and bounds they share, the client's TLS, and the core addon with its locator. Anything else — a
 * server module, the relay addon, a new import of one — is outside.
 */
const CLIENT_OWN = [
  /^dist\/src\/(client|wire)\/[^/]+\.js$/,
  /^dist\/src\/native\/(addon|hashing|cbi1|limits)\.js$/,
  /^dist\/src\/config\/(defaults|limits)\.js$/,
  /^dist\/src\/security\/(client-tls|certificate-files)\.js$/,
  /^scripts\/native-target\.js$/,
  /^prebuilds\/[^/]+\/kv_dc_relay_core\.node$/,
];
/** The dependencies it may load, with whatever they depend on. */
const CLIENT_DEPENDENCIES = ['@grpc/grpc-js', 'protobufjs'];

/** The folder of package `name` as node resolves it from `fromDir` (walking up node_modules folders). */
function packageDir(name: string, fromDir: string): string {
  for (let dir = fromDir; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    if (fs.existsSync(path.join(candidate, 'package.json'))) return fs.realpathSync(candidate);
    if (path.dirname(dir) === dir) throw new Error(`${name} is not installed above ${fromDir}`);
  }
}

/** `roots` and their dependencies, transitively, as package folders. */
function dependencyClosure(roots: string[], fromDir: string): string[] {
  const found = new Set<string>();
  const visit = (name: string, from: string): void => {
    const dir = packageDir(name, from);
    if (found.has(dir)) return;
    found.add(dir);
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
    for (const dep of Object.keys(manifest.dependencies ?? {})) visit(dep, dir);
  };
  for (const name of roots) visit(name, fromDir);
  return [...found];
}

/** The loaded files the client entry must not load: neither on CLIENT_OWN nor in an allowed dependency. */
function outsideClient(host: string, loaded: string[]): string[] {
  const own = fs.realpathSync(path.join(host, 'node_modules', 'kv-dc-relay'));
  const deps = dependencyClosure(CLIENT_DEPENDENCIES, own);
  return loaded.filter((file) => {
    const rel = path.relative(own, file);
    if (!rel.startsWith('..') && !rel.startsWith('node_modules')) return !CLIENT_OWN.some((allowed) => allowed.test(rel));
    return !deps.some((dir) => file.startsWith(dir + path.sep));
  });
}

describe('package subpaths', () => {
  let work: string;
  let host: string;

  beforeAll(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'kv-dc-relay-subpaths-'));
    const staged = installStagedPackage(work);
    host = staged.host;
    for (const folder of ['client', 'server', 'discovery', 'native', 'wire']) {
      expect(staged.files).toEqual(expect.arrayContaining([`dist/src/${folder}/index.js`, `dist/src/${folder}/index.d.ts`]));
    }
  }, 300_000);

  afterAll(() => {
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  test('kv-dc-relay/client loads no server code, no zeromq and no etcd3', () => {
    const { exports, loaded } = loadIn(host, 'kv-dc-relay/client');
    expect(exports).toEqual(expect.arrayContaining(['RelayClient', 'ShardedRelayClient', 'findPrefixDepth', 'catalogView', 'queryPoolView']));
    expect(loaded).toContainEqual(expect.stringMatching(/node_modules\/kv-dc-relay\/dist\/src\/client\/relay-client\.js$/));
    expect(outsideClient(host, loaded)).toEqual([]);
  }, 60_000);

  // A router host with no libzmq in any form: zeromq (and the libzmq its addon carries) is not even
  // installed. The client still hashes, decodes CBI1 and answers a query from a real relay.
  test('kv-dc-relay/client works where zeromq is not installed at all', async () => {
    const bare = path.join(work, 'no-zmq-host');
    const installed = path.join(bare, 'node_modules', 'kv-dc-relay');
    fs.mkdirSync(path.dirname(installed), { recursive: true });
    fs.writeFileSync(path.join(bare, 'package.json'), JSON.stringify({ name: 'no-zmq-host', version: '1.0.0', private: true }));
    fs.cpSync(fs.realpathSync(path.join(host, 'node_modules', 'kv-dc-relay')), installed, { recursive: true, verbatimSymlinks: true });
    fs.rmSync(path.join(installed, 'node_modules'));
    fs.mkdirSync(path.join(installed, 'node_modules'));
    for (const name of fs.readdirSync(path.join(ROOT, 'node_modules'))) {
      if (name === 'zeromq' || name === 'cmake-ts' || name === '.bin') continue;
      fs.symlinkSync(path.join(ROOT, 'node_modules', name), path.join(installed, 'node_modules', name));
    }

    const tokens = Array.from({ length: 64 * 4 + 3 }, (_, i) => 7 * i + 1);
    const hashes = sequenceHashes(Uint32Array.from(tokens), 64, false, saltSeed(null, null));
    const source = new TestSource();
    const feed = source.attachPool(testProducer({ pool: 1, bucketCount: 256 }));
    for (const i of [0, 1]) {
      const p = ckfPrepare(hashes[i], 256, DEFAULT_CKF_SEED);
      feed.publish([[p.bucketA, feed.words[p.bucketA] | (BigInt(p.fingerprint) << 48n)]]);
    }
    const server: RelayServer = await startRelay(source);
    try {
      const script = `
        let zeromq = 'absent';
        try { require.resolve('zeromq', { paths: [require.resolve('kv-dc-relay/client')] }); zeromq = 'present'; } catch {}
        const { RelayClient } = require('kv-dc-relay/client');
        const client = new RelayClient(${JSON.stringify(server.address)}, { subscriberId: 'no-zmq-router' });
        client.on('replicaInstalled', () => {
          const result = client.query({ model: 'chat', tokens: ${JSON.stringify(tokens)} });
          const maps = require('fs').readFileSync('/proc/self/maps', 'utf8');
          client.close();
          process.stdout.write(JSON.stringify({ zeromq, matched: result.pools.map((p) => p.matchedBlocks), zmqMapped: /zeromq|libzmq/.test(maps), relayAddon: /kv_dc_relay\.node/.test(maps), coreAddon: /kv_dc_relay_core\.node/.test(maps) }));
        });
        client.start();`;
      const result = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = require('child_process').spawn(process.execPath, ['-e', script], { cwd: bare }) as import('child_process').ChildProcess;
        let stdout = '';
        let stderr = '';
        child.stdout!.on('data', (b: Buffer) => (stdout += b.toString()));
        child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
        child.on('exit', (status) => resolve({ status, stdout, stderr }));
      });
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual({ zeromq: 'absent', matched: [2], zmqMapped: false, relayAddon: false, coreAddon: true });
    } finally {
      await server.shutdown();
    }
  }, 60_000);

  test('the server and discovery entries do load their parts (the check above can see them)', () => {
    const server = loadIn(host, 'kv-dc-relay/server');
    expect(server.exports).toEqual(expect.arrayContaining(['startRelay', 'Producer', 'startRelayServer', 'loadConfigFile', 'defaults']));
    expect(outsideClient(host, server.loaded)).toEqual(
      expect.arrayContaining([expect.stringMatching(/dist\/src\/server\/start-relay\.js$/), expect.stringMatching(/node_modules\/zeromq\//)]),
    );
    const discovery = loadIn(host, 'kv-dc-relay/discovery');
    expect(discovery.exports).toEqual(expect.arrayContaining(['registerWorker', 'WorkerRegistration', 'EtcdShardAddresses']));
    expect(outsideClient(host, discovery.loaded)).toContainEqual(expect.stringMatching(/node_modules\/etcd3\//));
  }, 60_000);

  test('the root export keeps everything; native and wire load', () => {
    expect(loadIn(host, 'kv-dc-relay').exports).toEqual(
      expect.arrayContaining(['startRelay', 'RelayClient', 'EtcdShardAddresses', 'wire', 'native', 'identity', 'ingest', 'SimulatedEngine']),
    );
    expect(loadIn(host, 'kv-dc-relay/native').exports).toEqual(expect.arrayContaining(['blockHashes', 'xxh3', 'addonOrigins']));
    expect(loadIn(host, 'kv-dc-relay/wire').exports).toEqual(expect.arrayContaining(['encodeMessage', 'decodeMessage', 'WireDecodeError']));
    // Not an entry point: internals are not importable by path.
    const internal = spawnSync(process.execPath, ['-e', "require('kv-dc-relay/dist/src/ingest/index.js')"], { cwd: host, encoding: 'utf8' });
    expect(internal.stderr).toContain('ERR_PACKAGE_PATH_NOT_EXPORTED');
  }, 60_000);

  // A consumer using each entry point's types; a wrong or missing declaration fails tsc.
  const CONSUMER = `import { RelayClient, ShardedRelayClient, catalogView, type PoolQueryResult, type RelayClientOptions } from 'kv-dc-relay/client';
import { startRelay, type RelayProcessOptions, type RunningRelay } from 'kv-dc-relay/server';
import { EtcdShardAddresses, registerWorker } from 'kv-dc-relay/discovery';
import { blockHashes, XXH3_SEED } from 'kv-dc-relay/native';
import { decodeMessage, encodeMessage } from 'kv-dc-relay/wire';
import * as root from 'kv-dc-relay';

const options: RelayClientOptions = { subscriberId: 'router-a' };
const client: RelayClient = new RelayClient('relay.dc-b.internal:5561', options);
const sameClass: typeof root.RelayClient = RelayClient;
const sharded: typeof ShardedRelayClient = root.ShardedRelayClient;
const depth = (r: PoolQueryResult): number | null => r.matchedBlocks;
const start: (o: RelayProcessOptions) => Promise<RunningRelay> = startRelay;
const seed: bigint = XXH3_SEED;
export const used = [client, sameClass, sharded, depth, start, seed, catalogView, EtcdShardAddresses, registerWorker, blockHashes, decodeMessage, encodeMessage];
`;

  // node16 also checks every declaration file the package ships (skipLibCheck off); the other two
  // check that each subpath resolves to its declarations.
  test.each([
    ['node16', { module: 'node16', moduleResolution: 'node16', skipLibCheck: false }],
    ['bundler', { module: 'esnext', moduleResolution: 'bundler', skipLibCheck: true }],
    ['node10 (typesVersions)', { module: 'commonjs', moduleResolution: 'node10', skipLibCheck: true }],
  ])('a TypeScript project type-checks every subpath with moduleResolution %s', (name, resolution) => {
    const project = path.join(host, `ts-${name.split(' ')[0]}`);
    fs.mkdirSync(project);
    fs.writeFileSync(path.join(project, 'index.ts'), CONSUMER);
    fs.writeFileSync(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          ...resolution,
          target: 'ES2022',
          strict: true,
          noEmit: true,
          esModuleInterop: true,
          types: ['node'],
          typeRoots: [path.join(ROOT, 'node_modules', '@types')],
        },
        files: ['index.ts'],
      }),
    );
    const checked = tsc(['-p', 'tsconfig.json'], project);
    expect(checked.output).toBe('');
    expect(checked.status).toBe(0);
  }, 120_000);
});
