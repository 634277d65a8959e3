// Docs that cannot rot: every code block in README.md and docs/*.md says what happens to it, and
// what it shows works as shown.
//   ```sh test    run, with the page's other `sh test` blocks, as one bash script in an empty folder
//   ```ts test    run as a program against a running relay (the demo's)
//   ```yaml config   a valid relay config
//   ```<lang> norun  not run here (needs vLLM, certificates, an etcd cluster...), said on purpose
// The documented ports (5557, 5558, 8000, 5561, 9464) become free ones, and `npx kv-dc-relay` runs
// this checkout's built CLI (dist/, as npx does; `npm run build:ts` after changing src/).
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { startDemo, type Demo } from '../../src/cli/demo';
import { parseConfigText } from '../../src/config/load';
import { ROOT } from '../support/cli-process';

interface Block {
  page: string;
  line: number;
  lang: string;
  tags: string[];
  text: string;
}

const PAGES = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => path.join('docs', f))].filter(
  (page) => !page.startsWith(path.join('docs', 'incoming')),
);
const DOCUMENTED_PORTS = [5557, 5558, 8000, 5561, 9464];
const HOOK = path.join(ROOT, 'scripts', 'ts-hook.js');
const CLI = path.join(ROOT, 'dist', 'src', 'cli', 'main.js');

function blocksOf(page: string): Block[] {
  const lines = fs.readFileSync(path.join(ROOT, page), 'utf8').split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S+)?(.*)$/.exec(lines[i]);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith('```'));
    if (end < 0) throw new Error(`${page}:${i + 1}: unclosed code block`);
    if (open[1]) blocks.push({ page, line: i + 1, lang: open[1], tags: open[2].trim().split(/\s+/).filter(Boolean), text: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return blocks;
}

const BLOCKS = PAGES.flatMap(blocksOf);
const tagged = (tag: string) => BLOCKS.filter((b) => b.tags.includes(tag));

async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Documented port -> a free one, the same for every block of a run. */
async function portMap(): Promise<Map<number, number>> {
  const map = new Map<number, number>();
  for (const port of DOCUMENTED_PORTS) map.set(port, await freePort());
  return map;
}

function remap(text: string, ports: Map<number, number>): string {
  return text.replace(new RegExp(`\\b(${DOCUMENTED_PORTS.join('|')})\\b`, 'g'), (p) => String(ports.get(Number(p))));
}

function run(command: string, args: string[], cwd: string, timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, PATH: `${path.join(cwd, '.bin')}:${process.env.PATH}` } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** An empty folder with `npx kv-dc-relay` running this checkout's CLI. */
function workFolder(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kv-dc-relay-docs-'));
  fs.mkdirSync(path.join(dir, '.bin'));
  fs.writeFileSync(
    path.join(dir, '.bin', 'npx'),
    `#!/usr/bin/env bash\n[ "$1" = kv-dc-relay ] || { echo "docs test: only npx kv-dc-relay is provided" >&2; exit 127; }\nshift\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} "$@"\n`,
    { mode: 0o755 },
  );
  return dir;
}

test('every code block is marked: test, config or norun', () => {
  const unmarked = BLOCKS.filter((b) => !b.tags.some((t) => ['test', 'config', 'norun'].includes(t))).map((b) => `${b.page}:${b.line}`);
  expect(unmarked).toEqual([]);
  expect(tagged('test').length).toBeGreaterThanOrEqual(3);
});

describe.each(tagged('config').map((b) => [`${b.page}:${b.line}`, b] as const))('%s is a valid relay config', (_where, block) => {
  test('parses', () => {
    expect(() => parseConfigText(block.text, `${block.page}#L${block.line}.yaml`)).not.toThrow();
  });
});

describe.each(PAGES.filter((page) => tagged('test').some((b) => b.page === page && b.lang === 'sh')))('the shell blocks of %s', (page) => {
  test('run as shown', async () => {
    const ports = await portMap();
    const dir = workFolder();
    try {
      const body = tagged('test')
        .filter((b) => b.page === page && b.lang === 'sh')
        .map((b) => remap(b.text, ports))
        .join('\n');
      // Background jobs end with the script (SIGTERM, as Ctrl-C would).
      fs.writeFileSync(path.join(dir, 'blocks.sh'), `set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null; wait' EXIT\n${body}\n`);
      const result = await run('bash', ['blocks.sh'], dir, 90_000);
      if (result.code !== 0) throw new Error(`${page}: exit ${result.code}\n${result.stdout}\n${result.stderr}`);
      if (page === 'README.md') {
        expect(result.stdout).toMatch(/^model llama \(base llama\): 1 pool\(s\)\n {2}demo\.backend\.generate {2}depth \d+\/4 blocks = \d+ tokens {2}\(bs 16 standard\) {2}readiness READY {2}kv \d+\/512$/m);
        expect(fs.readFileSync(path.join(dir, 'engine.yaml'), 'utf8')).toContain('kvEvents:');
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('programs against a running relay', () => {
  let demo: Demo;
  let ports: Map<number, number>;
  beforeAll(async () => {
    ports = await portMap();
    demo = await startDemo({ bind: `127.0.0.1:${ports.get(5561)}` });
  }, 60_000);
  afterAll(async () => {
    await demo?.stop();
    if (demo) fs.rmSync(demo.dir, { recursive: true, force: true });
  });

  test.each(tagged('test').filter((b) => b.lang === 'ts').map((b) => [`${b.page}:${b.line}`, b] as const))('%s', async (_where, block) => {
    // Inside the package, so `kv-dc-relay/...` resolves to it by name (its `exports`, built in dist/).
    const dir = fs.mkdtempSync(path.join(ROOT, '.docs-test-'));
    try {
      fs.mkdirSync(path.join(dir, '.bin'));
      // A config for programs that start a relay of their own: the README's minimal one, on free ports.
      const minimal = BLOCKS.find((b) => b.page === 'README.md' && b.tags.includes('config'))!;
      fs.writeFileSync(path.join(dir, 'relay.yaml'), remap(minimal.text, await portMap()).replace('0.0.0.0', '127.0.0.1'));
      fs.writeFileSync(path.join(dir, 'program.ts'), remap(block.text, ports));
      const result = await run(process.execPath, ['-r', HOOK, 'program.ts'], dir, 60_000);
      if (result.code !== 0) throw new Error(`exit ${result.code}\n${result.stdout}\n${result.stderr}`);
      expect(result.stdout).not.toBe('');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
