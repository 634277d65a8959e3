#!/usr/bin/env node
// kv-dc-relay command-line entry: one subcommand per module; add new ones to COMMANDS.
import { demoCommand } from './demo';
import { queryCommand } from './query';
import { registerCommand } from './register';
import { serveCommand } from './serve';
import { watchCommand } from './watch';

type Command = (argv: string[]) => Promise<number>;

const COMMANDS: Record<string, Command> = {
  serve: serveCommand,
  watch: watchCommand,
  query: queryCommand,
  demo: demoCommand,
  register: registerCommand,
};

const USAGE = `usage: kv-dc-relay <command> [options]\ncommands: ${Object.keys(COMMANDS).join(', ')}`;

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h') {
    process.stderr.write(`${USAGE}\n`);
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`unknown command: ${name}\n${USAGE}\n`);
    return 2;
  }
  return command(rest);
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    // Sockets and timers of stopped components may linger; the command's result is final.
    (code) => process.exit(code),
    (err: Error) => {
      process.stderr.write(`${err.stack ?? err.message}\n`);
      process.exit(1);
    },
  );
}
