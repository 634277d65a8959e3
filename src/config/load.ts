// Reading and validating a config file (JSON or YAML by extension).
import * as fs from 'fs';
import * as path from 'path';
import * as YAML from 'yaml';
import type { z } from 'zod';
import { ConfigError, fieldPath } from './errors';
import { relayConfigSchema, type RelayConfig } from './schema';
import { knownFields, nearestField } from './suggest';

/** Command-line values that beat the file (`--bind`, `--dc-id`, `--tls-*`). */
export interface ConfigOverrides {
  bind?: string;
  dcId?: string;
  /** Merged over the file's `tls` fields (the file may have none). */
  tls?: { cert?: string; key?: string; ca?: string; requireClientCert?: boolean };
  /** `--dynamo-etcd`, `--dynamo-nats`, `--dynamo-namespaces`: merged over the file's `discovery.dynamo`. */
  dynamo?: { etcd?: string[]; nats?: string[]; namespaces?: string[] };
}

export function parseConfigText(text: string, file: string, overrides: ConfigOverrides = {}): RelayConfig {
  const raw = parseDocument(text, file);
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ConfigError(file, '(root)', 'must be a mapping of config fields');
  }
  const merged: Record<string, unknown> = { ...(raw as Record<string, unknown>) };
  if (overrides.bind !== undefined) merged.bind = overrides.bind;
  if (overrides.dcId !== undefined) merged.dcId = overrides.dcId;
  const dynamo = overrides.dynamo;
  if (dynamo && (dynamo.etcd || dynamo.nats || dynamo.namespaces)) {
    const object = (v: unknown): Record<string, unknown> => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
    const discovery = object(merged.discovery);
    const file = object(discovery.dynamo);
    merged.discovery = {
      ...discovery,
      dynamo: {
        ...file,
        ...(dynamo.etcd ? { etcd: { ...object(file.etcd), endpoints: dynamo.etcd } } : {}),
        ...(dynamo.nats ? { nats: { ...object(file.nats), servers: dynamo.nats } } : {}),
        ...(dynamo.namespaces ? { namespaces: dynamo.namespaces } : {}),
      },
    };
  }
  const tls = Object.entries(overrides.tls ?? {}).filter(([, v]) => v !== undefined);
  if (tls.length > 0) {
    const fileTls = merged.tls !== null && typeof merged.tls === 'object' && !Array.isArray(merged.tls) ? merged.tls : {};
    merged.tls = { ...fileTls, ...Object.fromEntries(tls) };
  }
  const result = relayConfigSchema.safeParse(merged, { reportInput: true });
  if (!result.success) throw issuesToError(file, result.error.issues, relayConfigSchema);
  return result.data;
}

export function loadConfigFile(file: string, overrides: ConfigOverrides = {}): RelayConfig {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(file, '(file)', `cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  return parseConfigText(text, file, overrides);
}

function parseDocument(text: string, file: string): unknown {
  const ext = path.extname(file).toLowerCase();
  if (ext === '.json') {
    try {
      return JSON.parse(text);
    } catch (err) {
      throw new ConfigError(file, '(root)', `invalid JSON: ${oneLine((err as Error).message)}`);
    }
  }
  if (ext === '.yaml' || ext === '.yml') {
    const lineCounter = new YAML.LineCounter();
    const doc = YAML.parseDocument(text, { uniqueKeys: true, prettyErrors: false, lineCounter });
    const first = doc.errors[0];
    if (first) {
      const { line } = lineCounter.linePos(first.pos[0]);
      throw new ConfigError(file, '(root)', `invalid YAML at line ${line}: ${oneLine(first.message)}`);
    }
    return doc.toJS();
  }
  throw new ConfigError(file, '(file)', 'unsupported extension (use .json, .yaml or .yml)');
}

/**
 * A schema's issues as one line naming `file` (a config file, or an etcd key): the first issue, but
 * an unknown field before the `required` of the field it misspells. With the `schema` that was
 * checked, an unknown field names the allowed one it is nearest to, if any.
 */
export function issuesToError(file: string, issues: readonly z.core.$ZodIssue[], schema?: z.core.$ZodType): ConfigError {
  const meant = (issue: z.core.$ZodIssue): string | undefined =>
    schema && issue.code === 'unrecognized_keys' ? nearestField(issue.keys[0], knownFields(schema, issue.path)) : undefined;
  const misspelt = issues.find((issue) => {
    const field = meant(issue);
    return field !== undefined && issues.some((other) => isRequired(other) && fieldPath(other.path) === fieldPath([...issue.path, field]));
  });
  const issue = misspelt ?? issues[0];
  if (issue.code === 'unrecognized_keys') {
    const field = meant(issue);
    return new ConfigError(file, fieldPath([...issue.path, issue.keys[0]]), field ? `unknown field (did you mean ${field}?)` : 'unknown field');
  }
  if (issue.code === 'invalid_key' && issue.issues.length > 0) {
    return new ConfigError(file, fieldPath(issue.path), oneLine(issue.issues[0].message));
  }
  if (isRequired(issue)) return new ConfigError(file, fieldPath(issue.path), 'required');
  return new ConfigError(file, fieldPath(issue.path), oneLine(issue.message));
}

function isRequired(issue: z.core.$ZodIssue): boolean {
  return issue.code === 'invalid_type' && issue.input === undefined;
}

function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}
