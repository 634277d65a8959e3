// JSON-lines logging on stderr (pino). Synchronous writes so the last lines before an exit are kept.
import pino from 'pino';
import { LOG_FIELD_MAX_CHARS } from './config/limits';

export type Logger = pino.Logger;

export interface LoggerOptions {
  /** pino level; default from KV_DC_RELAY_LOG_LEVEL, else `info`. */
  level?: string;
  /** Where lines go; default stderr. */
  destination?: NodeJS.WritableStream | number;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? process.env.KV_DC_RELAY_LOG_LEVEL ?? 'info';
  const dest = options.destination ?? 2;
  const stream = typeof dest === 'number' ? pino.destination({ dest, sync: true }) : dest;
  return pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, stream);
}

/** A logger that drops everything (library use without a configured logger, tests). */
export const silentLogger: Logger = pino({ level: 'silent' });

/**
 * A text a peer chose (an etcd key, a problem quoting a value) as a log field: its first
 * LOG_FIELD_MAX_CHARS characters and its length. An etcd key may be ~1.5 MiB, and a rejected one is
 * logged at every change of its problem.
 */
export function clipForLog(text: string): string {
  return text.length <= LOG_FIELD_MAX_CHARS ? text : `${text.slice(0, LOG_FIELD_MAX_CHARS)}… (${text.length} characters)`;
}
