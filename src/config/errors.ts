// A config problem, reported as one line: `FILE: field.path: problem`.
export class ConfigError extends Error {
  constructor(
    readonly file: string,
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${file}: ${field}: ${problem}`);
    this.name = 'ConfigError';
  }
}

/** Dotted field path; the document root is `(root)`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  return path.length === 0 ? '(root)' : path.map(String).join('.');
}
