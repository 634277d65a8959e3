// JSON-lines logging on stderr (pino). Synchronous writes so the last lines before an exit are kept.
import pino from 'pino';

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
