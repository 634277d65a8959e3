// Watches a config file and hands every valid new version to `onChange`. The directory is watched
// (not the file) so atomic renames over the file are noticed, with a slow stat poll as a backstop
// where fs.watch misses events (network mounts; a Kubernetes ConfigMap's symlink swap renames
// `..data`, not the file); the poll shares its timer with the relay's other once-a-second work
// (src/periodic.ts), so it wakes no idle relay of its own; bursts are debounced and a version whose text did not change is
// not reported. An invalid version goes to `onError` whole and the caller keeps its running state.
import * as fs from 'fs';
import * as path from 'path';
import { ConfigError } from './errors';
import { CONFIG_WATCH_DEBOUNCE_MS, CONFIG_WATCH_POLL_MS } from './limits';
import { everyInterval } from '../periodic';
import { parseConfigText, type ConfigOverrides } from './load';
import type { RelayConfig } from './schema';

export interface ConfigWatchOptions {
  overrides?: ConfigOverrides;
  debounceMs?: number;
  onChange(config: RelayConfig): void;
  onError(err: ConfigError): void;
}

export interface ConfigWatcher {
  close(): void;
}

/** `initialText` is the text the caller already applied (changes are reported relative to it). */
export function watchConfigFile(file: string, initialText: string | undefined, options: ConfigWatchOptions): ConfigWatcher {
  const dir = path.dirname(path.resolve(file));
  const base = path.basename(file);
  const debounceMs = options.debounceMs ?? CONFIG_WATCH_DEBOUNCE_MS;
  let lastText = initialText;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const reload = (): void => {
    timer = undefined;
    if (closed) return;
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      // Between an unlink and the rename that replaces it the file may be briefly absent.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      options.onError(new ConfigError(file, '(file)', `cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`));
      return;
    }
    if (text === lastText) return;
    lastText = text;
    let config: RelayConfig;
    try {
      config = parseConfigText(text, file, options.overrides);
    } catch (err) {
      if (err instanceof ConfigError) options.onError(err);
      else throw err;
      return;
    }
    options.onChange(config);
  };

  const schedule = (): void => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(reload, debounceMs);
  };
  const watcher = fs.watch(dir, { persistent: false }, (_event, filename) => {
    if (filename === null || filename.toString() === base) schedule();
  });
  watcher.on('error', (err) => options.onError(new ConfigError(file, '(file)', `watch failed: ${err.message}`)));

  let lastStat = statKey(file);
  const stopPoll = everyInterval(CONFIG_WATCH_POLL_MS, () => {
    const key = statKey(file);
    if (key !== lastStat) schedule();
    lastStat = key;
  });

  return {
    close(): void {
      closed = true;
      if (timer) clearTimeout(timer);
      stopPoll();
      watcher.close();
    },
  };
}

function statKey(file: string): string {
  try {
    const st = fs.statSync(file);
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return 'absent';
  }
}
