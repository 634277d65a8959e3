// A packed kv-dc-relay built from the current sources in a temporary folder (the repository's own
// dist/ is neither read nor written), installed by name into a host folder: what a user gets from
// the registry, without the network. The package's dependencies are this repository's node_modules.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

export const ROOT = path.resolve(__dirname, '..', '..');
const { ADDON_FILES } = require(path.join(ROOT, 'scripts', 'native-target.js')) as { ADDON_FILES: Record<string, string> };

/** Runs a command to its end; throws with its output when it fails. */
export function sh(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  const result = spawnSync(command, args, { cwd, env, encoding: 'utf8' });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  }
  return result.stdout;
}

/** The repository's TypeScript compiler, run with node in `cwd`; returns its exit status and output. */
export function tsc(args: string[], cwd: string): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), ...args], { cwd, encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/**
 * Compiles src/ into `work`/stage, adds the package's files and this host's addons as its prebuilds,
 * packs it with npm, and unpacks the tarball into `work`/host/node_modules/kv-dc-relay.
 * Returns the host folder and the list of packed files.
 */
export function installStagedPackage(work: string): { host: string; files: string[] } {
  const stage = path.join(work, 'stage');
  const tsconfig = path.join(work, 'tsconfig.stage.json');
  fs.writeFileSync(
    tsconfig,
    JSON.stringify({
      extends: path.join(ROOT, 'tsconfig.json'),
      compilerOptions: { rootDir: ROOT, outDir: path.join(stage, 'dist'), sourceMap: false, typeRoots: [path.join(ROOT, 'node_modules', '@types')] },
      include: [path.join(ROOT, 'src', '**', '*.ts'), path.join(ROOT, 'binding.d.ts')],
    }),
  );
  const built = tsc(['-p', tsconfig], work);
  if (built.status !== 0) throw new Error(`tsc failed:\n${built.output}`);
  for (const entry of ['package.json', 'README.md', 'binding.d.ts', 'CMakeLists.txt', 'proto', 'native', 'scripts']) {
    fs.cpSync(path.join(ROOT, entry), path.join(stage, entry), { recursive: true });
  }
  fs.copyFileSync(path.join(ROOT, 'binding.d.ts'), path.join(stage, 'dist', 'binding.d.ts'));
  const prebuilds = path.join(stage, 'prebuilds', `${process.platform}-${process.arch}`);
  fs.mkdirSync(prebuilds, { recursive: true });
  for (const file of Object.values(ADDON_FILES)) fs.copyFileSync(path.join(ROOT, 'build', 'Release', file), path.join(prebuilds, file));

  const packed = JSON.parse(sh('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], stage)) as {
    filename: string;
    files: { path: string }[];
  }[];
  const host = path.join(work, 'host');
  const installed = path.join(host, 'node_modules', 'kv-dc-relay');
  fs.mkdirSync(installed, { recursive: true });
  fs.writeFileSync(path.join(host, 'package.json'), JSON.stringify({ name: 'host', version: '1.0.0', private: true }));
  sh('tar', ['-xzf', path.join(work, packed[0].filename), '-C', installed, '--strip-components=1'], work);
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(installed, 'node_modules'));
  return { host, files: packed[0].files.map((f) => f.path) };
}
