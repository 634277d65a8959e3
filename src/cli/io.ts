// The streams a command writes to: the process's own, or a test's.
export interface CliIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream;
}

export const processIo: CliIo = { stdout: process.stdout, stderr: process.stderr };
