/** What every command shares with the program: exit codes, expected errors, where it writes. */

/** Exit codes of every command (docs/OPERATIONS.md, "Operate"). */
export const EXIT_OK = 0;
/** The command ran and found a problem: a failed delivery, a signature that does not verify, differences, a failed publish, nothing found. */
export const EXIT_FAILURE = 1;
/** The command could not run as given: unknown command or option, a bad value, invalid configuration. */
export const EXIT_USAGE = 2;

export type ExitCode = typeof EXIT_OK | typeof EXIT_FAILURE | typeof EXIT_USAGE;

/** An expected failure with a message for the operator (never a key, signature, body or buyer data). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode = EXIT_FAILURE,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export class UsageError extends CliError {
  constructor(message: string) {
    super(message, EXIT_USAGE);
    this.name = 'UsageError';
  }
}

/** Where a command writes. Progress bars go to stderr, only when it is a terminal and not --json. */
export interface CliIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
}

export const processIo = (): CliIo => ({ stdout: process.stdout, stderr: process.stderr, env: process.env });

/** Each command's action returns its exit code; this is where the program collects it. */
export interface CliState {
  exitCode: ExitCode;
}

/** Runs an action and records its exit code; errors propagate to the entry point. */
export function action<A extends unknown[]>(
  state: CliState,
  run: (...args: A) => Promise<ExitCode>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    state.exitCode = await run(...args);
  };
}
