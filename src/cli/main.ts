#!/usr/bin/env node
// kv-dc-relay command-line entry: parses with the program (program.ts), runs one command, and turns
// every failure into one line on stderr and an exit code (usage.ts's EXIT) instead of a stack trace.
import { CommanderError } from 'commander';
import { ConfigError } from '../config/errors';
import { processIo, type CliIo } from './io';
import { buildProgram } from './program';
import { EXIT, UsageError } from './usage';

/** The command named in argv (for error lines), or undefined before one. */
function commandName(argv: string[]): string | undefined {
  return argv.find((a) => !a.startsWith('-'));
}

export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
  let code: number = EXIT.ok;
  const program = buildProgram(io, (c) => (code = c));
  const who = commandName(argv);
  const prefix = who && program.commands.some((c) => c.name() === who) ? `kv-dc-relay ${who}` : 'kv-dc-relay';
  if (argv.length === 0) {
    program.outputHelp({ error: true });
    return EXIT.usage;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help, --version and `help` end here too, with exit code 0.
      if (err.exitCode === 0) return EXIT.ok;
      const message = err.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ');
      io.stderr.write(`${prefix}: ${message} (see ${prefix} --help)\n`);
      return EXIT.usage;
    }
    if (err instanceof UsageError) {
      io.stderr.write(`${prefix}: ${err.message} (see ${prefix} --help)\n`);
      return EXIT.usage;
    }
    if (err instanceof ConfigError) {
      io.stderr.write(`${err.message}\n`);
      return EXIT.usage;
    }
    // A runtime failure: the native addon that does not load, a port in use, an unreachable etcd.
    const message = (err as Error).message ?? String(err);
    io.stderr.write(`${message.startsWith('kv-dc-relay') ? message : `${prefix}: ${message}`}\n`);
    if (process.env.KV_DC_RELAY_DEBUG) io.stderr.write(`${(err as Error).stack}\n`);
    return EXIT.failure;
  }
}

if (require.main === module) {
  // Output piped into a reader that stopped (`| head`) is not an error of the command.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(EXIT.ok);
    });
  }
  main(process.argv.slice(2)).then(
    // Sockets and timers of stopped components may linger; the command's result is final.
    (code) => process.exit(code),
    (err: Error) => {
      process.stderr.write(`kv-dc-relay: ${err.message}\n`);
      process.exit(EXIT.failure);
    },
  );
}
