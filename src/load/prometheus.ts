// vLLM KV-cache usage from Prometheus text exposition (relay-config.md, Details: load). Only
// `vllm:kv_cache_usage_perc` is read (a 0..1 fraction despite its name); other metrics, comments,
// labels and malformed lines are skipped, so one odd line never hides the samples around it.

export const VLLM_KV_USAGE_METRIC = 'vllm:kv_cache_usage_perc';

export interface UsageSample {
  /** The `engine` label (the absolute data-parallel rank), absent on single-engine servers. */
  engine: string | undefined;
  value: number;
}

export function parseVllmKvUsage(text: string): UsageSample[] {
  const samples: UsageSample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line.startsWith(VLLM_KV_USAGE_METRIC)) continue;
    const sample = parseSample(line.slice(VLLM_KV_USAGE_METRIC.length));
    if (sample) samples.push(sample);
  }
  return samples;
}

/** `{labels} value [timestamp]` or ` value [timestamp]` after the metric name. */
function parseSample(rest: string): UsageSample | undefined {
  let labels = new Map<string, string>();
  if (rest.startsWith('{')) {
    const parsed = parseLabels(rest);
    if (!parsed) return undefined;
    labels = parsed.labels;
    rest = rest.slice(parsed.end);
  }
  // Guards against a longer metric name sharing the prefix (e.g. `..._perc_total`).
  if (!/^\s/.test(rest)) return undefined;
  const fields = rest.trim().split(/\s+/);
  if (fields.length < 1 || fields.length > 2) return undefined;
  const value = parseValue(fields[0]);
  return value === undefined ? undefined : { engine: labels.get('engine'), value };
}

function parseValue(s: string): number | undefined {
  if (s === 'NaN') return NaN;
  if (s === '+Inf' || s === 'Inf') return Infinity;
  if (s === '-Inf') return -Infinity;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return undefined;
  return Number(s);
}

const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;
const ESCAPES: Record<string, string> = { '\\': '\\', '"': '"', n: '\n' };

/** Parses `{name="value",...}` at the start of `s`; `end` is the index after the closing brace. */
function parseLabels(s: string): { labels: Map<string, string>; end: number } | undefined {
  const labels = new Map<string, string>();
  let i = 1;
  const skipSpaces = (): void => {
    while (s[i] === ' ' || s[i] === '\t') i++;
  };
  for (;;) {
    skipSpaces();
    if (s[i] === '}') return { labels, end: i + 1 };
    const name = LABEL_NAME.exec(s.slice(i))?.[0];
    if (!name) return undefined;
    i += name.length;
    skipSpaces();
    if (s[i++] !== '=') return undefined;
    skipSpaces();
    if (s[i++] !== '"') return undefined;
    let value = '';
    while (s[i] !== '"') {
      if (i >= s.length) return undefined;
      if (s[i] === '\\') {
        const escaped = ESCAPES[s[i + 1]];
        if (escaped === undefined) return undefined;
        value += escaped;
        i += 2;
      } else {
        value += s[i++];
      }
    }
    i++;
    labels.set(name, value);
    skipSpaces();
    if (s[i] === ',') i++;
    else if (s[i] !== '}') return undefined;
  }
}
