// How to start one of the simulation's processes: from the TypeScript sources through the project's
// transpile hook when this code runs from them (tests), else the compiled JavaScript beside it.
import * as path from 'path';

/** The repository root from the sources, or dist/ when compiled (both four levels up). */
const BASE = path.resolve(__dirname, '..', '..', '..', '..');
const FROM_SOURCES = __filename.endsWith('.ts');
const HOOK = ['-r', path.join(BASE, 'scripts', 'ts-hook.js')];

export interface NodeEntry {
  execArgv: string[];
  script: string;
}

/** A module of this folder (cluster/), by name without extension. */
export function simEntry(module: string): NodeEntry {
  return { execArgv: FROM_SOURCES ? HOOK : [], script: path.join(__dirname, `${module}${FROM_SOURCES ? '.ts' : '.js'}`) };
}

/** The `kv-dc-relay` command. */
export function relayEntry(): NodeEntry {
  return { execArgv: FROM_SOURCES ? HOOK : [], script: path.join(BASE, 'src', 'cli', FROM_SOURCES ? 'main.ts' : 'main.js') };
}
