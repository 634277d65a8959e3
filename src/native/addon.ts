// The only module that loads the compiled addons; everything else imports the typed wrappers in
// src/native/. Two addons (scripts/native-target.js): `core` (hashing, CKF, CBI1: what a consumer
// needs) and `relay` (pool state, ingest), each loaded on first use, so `kv-dc-relay/client` never
// maps the relay's code. A from-source build (build/Release, present only when someone compiled on
// this host: a source checkout or `--build-from-source`) wins over the packaged prebuild for this
// platform; when neither loads, one error names every candidate and the real cause of each refusal.
import * as fs from 'fs';
import * as path from 'path';
import type { CoreAddon, RelayAddon } from '../../binding';

export type AddonName = 'core' | 'relay';

export interface NativeTarget {
  ADDON_FILES: Record<AddonName, string>;
  localBuildPath(root: string, name: AddonName): string;
  prebuildPath(root: string, name: AddonName): string;
  testingBuildPath(root: string): string;
}

export interface AddonOrigin {
  kind: 'local-build' | 'prebuild';
  path: string;
}

/** No candidate file of an addon loaded; `message` is one line naming each and why. */
export class AddonLoadError extends Error {
  readonly code = 'EADDONLOAD';
}

/** The directory of this package's package.json. */
export function packageRoot(): string {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`kv-dc-relay: no package.json above ${__dirname}`);
    dir = parent;
  }
  return dir;
}

/** scripts/native-target.js: where the addons are built and packaged. */
export function nativeTarget(root: string): NativeTarget {
  return require(path.join(root, 'scripts', 'native-target.js')) as NativeTarget;
}

// ELF e_machine of each Node.js architecture (the ones Node ships for on Linux).
const ELF_MACHINES: Record<string, number> = { ia32: 3, arm: 40, ppc64: 21, s390x: 22, x64: 62, arm64: 183, riscv64: 243 };

/** What the file's header says it is, when that is not a shared object this process can map. */
function headerMismatch(file: string): string | null {
  if (process.platform !== 'linux') return null;
  let header: Buffer;
  try {
    header = Buffer.alloc(20);
    const fd = fs.openSync(file, 'r');
    try {
      fs.readSync(fd, header, 0, header.length, 0);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return null;
  }
  if (header.readUInt32BE(0) !== 0x7f454c46) return 'not a native addon (not an ELF shared object)';
  const machine = header.readUInt16LE(18);
  const expected = ELF_MACHINES[process.arch];
  if (expected !== undefined && machine !== expected) {
    const built = Object.keys(ELF_MACHINES).find((arch) => ELF_MACHINES[arch] === machine) ?? `ELF machine ${machine}`;
    return `built for ${built}, this host is ${process.arch}`;
  }
  return null;
}

/**
 * The real cause of a failed load of `file`, from the loader's message (dlopen's or Node's), in
 * words an operator can act on. Pure but for a look at the file's header.
 */
export function explainLoadFailure(file: string, message: string): string {
  const first = message.split('\n')[0].trim();
  const missing = /^([^\s:]+): cannot open shared object file/.exec(first);
  if (missing && path.resolve(missing[1]) !== path.resolve(file)) {
    return `missing shared library ${missing[1]} (the addon was linked against it and this host has none)`;
  }
  const mismatch = headerMismatch(file);
  if (mismatch) return mismatch;
  if (/invalid ELF header|file too short|wrong ELF class|ELF load command/.test(first)) return `not a native addon for this platform (${first})`;
  const glibc = /version `([^']+)' not found/.exec(first);
  if (glibc) return `needs ${glibc[1]}, newer than this host's C/C++ runtime`;
  const abi = /NODE_MODULE_VERSION (\d+)\. This version of Node\.js requires\s+NODE_MODULE_VERSION (\d+)/.exec(message.replace(/\s*\n\s*/g, ' '));
  if (abi) return `built for another Node.js ABI (NODE_MODULE_VERSION ${abi[1]}; Node.js ${process.versions.node} needs ${abi[2]})`;
  if (/Node-API version|undefined symbol: (napi|node_api)_/.test(first)) {
    return `Node-API mismatch: built for a newer Node-API than Node.js ${process.versions.node} (N-API ${process.versions.napi}) has (${first})`;
  }
  if (/did not self-register/.test(first)) return 'not a Node.js addon (a shared object that registers no module)';
  return first;
}

function load<T>(name: AddonName): { binding: T; origin: AddonOrigin } {
  const root = packageRoot();
  const target = nativeTarget(root);
  const candidates: AddonOrigin[] = [
    { kind: 'local-build', path: target.localBuildPath(root, name) },
    { kind: 'prebuild', path: target.prebuildPath(root, name) },
  ];
  const refused: string[] = [];
  let present = false;
  for (const candidate of candidates) {
    if (!fs.existsSync(candidate.path)) {
      refused.push(`${candidate.kind} ${candidate.path}: not present`);
      continue;
    }
    present = true;
    try {
      return { binding: require(candidate.path) as T, origin: candidate };
    } catch (err) {
      refused.push(`${candidate.kind} ${candidate.path}: ${explainLoadFailure(candidate.path, (err as Error).message)}`);
    }
  }
  const hint = present
    ? 'reinstall the package, or rebuild on this host with `npm rebuild kv-dc-relay --build-from-source` (needs cmake, make, g++, python3)'
    : 'install a package that ships a prebuild for this platform, or build on this host with `npm install --build-from-source` (needs cmake, make, g++, python3)';
  throw new AddonLoadError(
    `kv-dc-relay: cannot load ${target.ADDON_FILES[name]} for ${process.platform}-${process.arch} (Node-API 8): ${refused.join('; ')}. Fix: ${hint}.`,
  );
}

const loaded = new Map<AddonName, { binding: unknown; origin: AddonOrigin }>();

function addonOf<T>(name: AddonName): T {
  let entry = loaded.get(name);
  if (!entry) {
    entry = load<T>(name);
    loaded.set(name, entry);
  }
  return entry.binding as T;
}

/** kv_dc_relay_core.node (hashing, CKF, CBI1), loaded on first call. */
export function coreAddon(): CoreAddon {
  return addonOf<CoreAddon>('core');
}

/** kv_dc_relay.node (pool state, ingest), loaded on first call. */
export function relayAddon(): RelayAddon {
  return addonOf<RelayAddon>('relay');
}

/** Which file each addon loaded so far came from, for diagnostics (`serve` logs them at start). */
export function addonOrigins(): Partial<Record<AddonName, AddonOrigin>> {
  return Object.fromEntries([...loaded].map(([name, entry]) => [name, entry.origin]));
}
