// The only module that loads the compiled addon; everything else imports the typed wrappers in
// src/native/. A from-source build (build/Release, present only when someone compiled on this
// host: a source checkout or `--build-from-source`) wins over the packaged prebuild for this
// platform; when neither loads, the error names every candidate and why it was refused.
import * as fs from 'fs';
import * as path from 'path';
import type * as Binding from '../../binding';

export interface NativeTarget {
  localBuildPath(root: string): string;
  prebuildPath(root: string): string;
  testingBuildPath(root: string): string;
}

export interface AddonOrigin {
  kind: 'local-build' | 'prebuild';
  path: string;
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

function load(): { binding: typeof Binding; origin: AddonOrigin } {
  const root = packageRoot();
  const target = nativeTarget(root);
  const candidates: AddonOrigin[] = [
    { kind: 'local-build', path: target.localBuildPath(root) },
    { kind: 'prebuild', path: target.prebuildPath(root) },
  ];
  const refused: string[] = [];
  for (const candidate of candidates) {
    if (!fs.existsSync(candidate.path)) {
      refused.push(`${candidate.kind} ${candidate.path}: not present`);
      continue;
    }
    try {
      return { binding: require(candidate.path) as typeof Binding, origin: candidate };
    } catch (err) {
      refused.push(`${candidate.kind} ${candidate.path}: ${(err as Error).message}`);
    }
  }
  throw new Error(
    `kv-dc-relay: no usable native addon for ${process.platform}-${process.arch} (Node-API 8):\n  ` +
      refused.join('\n  ') +
      '\nInstall a package that ships a prebuild for this platform, or rebuild with `npm install --build-from-source`.',
  );
}

const loaded = load();
export const addon: typeof Binding = loaded.binding;
/** Which addon file was loaded, for diagnostics (`kv-dc-relay serve` logs it at start). */
export const addonOrigin: AddonOrigin = loaded.origin;
