import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import type { ConfigError } from '../../src/config/errors';
import type { RelayConfig } from '../../src/config/schema';
import { watchConfigFile, type ConfigWatcher } from '../../src/config/watch';
import { waitForValue } from '../support/waitFor';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-watch-'));
const file = path.join(dir, 'relay.yaml');
let watcher: ConfigWatcher | undefined;
afterEach(() => watcher?.close());
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function start(initial: string): { changes: RelayConfig[]; errors: ConfigError[] } {
  fs.writeFileSync(file, initial);
  const changes: RelayConfig[] = [];
  const errors: ConfigError[] = [];
  watcher = watchConfigFile(file, initial, { debounceMs: 20, onChange: (c) => changes.push(c), onError: (e) => errors.push(e) });
  return { changes, errors };
}

test('an in-place write is reported within 2 s', async () => {
  const { changes } = start('dcId: dc-a\n');
  fs.writeFileSync(file, 'dcId: dc-a\nexpectedUniqueBlocks: 32\n');
  const cfg = await waitForValue(() => changes[0], 'a config change', 2000, 10);
  expect(cfg.expectedUniqueBlocks).toBe(32);
});

test('an atomic rename over the file is reported', async () => {
  const { changes } = start('dcId: dc-a\n');
  const tmp = path.join(dir, '.relay.yaml.tmp');
  fs.writeFileSync(tmp, 'dcId: dc-a\nexpectedUniqueBlocks: 64\n');
  fs.renameSync(tmp, file);
  const cfg = await waitForValue(() => changes[0], 'a config change', 2000, 10);
  expect(cfg.expectedUniqueBlocks).toBe(64);
});

test('an invalid version is an error and is not reported as a change; a later fix is', async () => {
  const { changes, errors } = start('dcId: dc-a\n');
  fs.writeFileSync(file, 'dcId: dc-a\nbogus: 1\n');
  const err = await waitForValue(() => errors[0], 'a config error', 2000, 10);
  expect(err.message).toBe(`${file}: bogus: unknown field`);
  expect(changes).toEqual([]);
  fs.writeFileSync(file, 'dcId: dc-b\n');
  const cfg = await waitForValue(() => changes[0], 'a config change', 2000, 10);
  expect(cfg.dcId).toBe('dc-b');
});

test('other files in the directory and unchanged rewrites are not reported', async () => {
  const { changes, errors } = start('dcId: dc-a\n');
  fs.writeFileSync(path.join(dir, 'other.yaml'), 'x: 1\n');
  fs.writeFileSync(file, 'dcId: dc-a\n');
  fs.writeFileSync(file, 'dcId: dc-c\n');
  const cfg = await waitForValue(() => changes[0], 'a config change', 2000, 10);
  expect(cfg.dcId).toBe('dc-c');
  expect(changes).toHaveLength(1);
  expect(errors).toEqual([]);
});

test("a Kubernetes ConfigMap update (the `..data` symlink swapped to a new directory) is reported", async () => {
  // ConfigMap volume layout: relay.yaml -> ..data/relay.yaml, ..data -> ..<timestamp>/; an update
  // writes a new timestamped directory and renames a new `..data` symlink over the old one, so no
  // event names relay.yaml itself.
  const volume = fs.mkdtempSync(path.join(dir, 'configmap-'));
  const version = (name: string, text: string): void => {
    fs.mkdirSync(path.join(volume, name));
    fs.writeFileSync(path.join(volume, name, 'relay.yaml'), text);
  };
  version('..v1', 'dcId: dc-a\n');
  fs.symlinkSync('..v1', path.join(volume, '..data'));
  const mounted = path.join(volume, 'relay.yaml');
  fs.symlinkSync(path.join('..data', 'relay.yaml'), mounted);
  const changes: RelayConfig[] = [];
  watcher = watchConfigFile(mounted, 'dcId: dc-a\n', { debounceMs: 20, onChange: (c) => changes.push(c), onError: () => undefined });
  version('..v2', 'dcId: dc-a\nexpectedUniqueBlocks: 128\n');
  fs.symlinkSync('..v2', path.join(volume, '..data_tmp'));
  fs.renameSync(path.join(volume, '..data_tmp'), path.join(volume, '..data'));
  fs.rmSync(path.join(volume, '..v1'), { recursive: true });
  const cfg = await waitForValue(() => changes[0], 'a config change', 5000, 10);
  expect(cfg.expectedUniqueBlocks).toBe(128);
});
