import { createReadStream } from 'node:fs';
import path from 'node:path';
import type { ListProblem } from '../../parsing/orderLists';
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

/**
 * The bytes of a file a command reads, or of stdin for `-`: at most `maxBytes` (a larger one is refused before
 * more is read). One that cannot be read is a usage error naming it (`what`) and the reason, never its content.
 */
export async function readInput(file: string, what: string, maxBytes = Number.POSITIVE_INFINITY): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of file === '-' ? process.stdin : createReadStream(file)) {
      const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
      bytes += buffer.length;
      if (bytes > maxBytes) throw new UsageError(`${what} ${file} is larger than ${maxBytes} bytes`);
      chunks.push(buffer);
    }
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(
      `cannot read ${what} ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  return Buffer.concat(chunks);
}

/** A bad line of a file, as the operator reads it: its number and field, never its content, and what followed. */
export const lineProblem = ({ at, field, problem }: ListProblem, consequence: string): string =>
  `line ${at}${field === null ? '' : ` (${field})`}: ${problem}; ${consequence}`;

/** How a file a command read is named in the audit trail: its name without its folders, or stdin. */
export const inputName = (file: string): string => (file === '-' ? 'stdin' : path.basename(file));
