#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { loadDotEnv } from '../config';
import {
  CliError,
  EXIT_FAILURE,
  EXIT_OK,
  EXIT_USAGE,
  processIo,
  type CliIo,
  type CliState,
  type ExitCode,
} from './commands/io';
import { registerEvents } from './commands/events';
import { registerHistory } from './commands/history';
import { registerInspect } from './commands/inspect';
import { registerOrders } from './commands/orders';
import { registerPurge } from './commands/purge';
import { registerQuarantine } from './commands/quarantine';
import { registerReconcile } from './commands/reconcile';
import { registerReproject } from './commands/reproject';
import { registerSimulate } from './commands/simulate';
import { registerVerify } from './commands/verify';

const EXIT_CODES_HELP = `
Exit codes (every command):
  0  success: done, found, verified, no differences
  1  the command ran and found a problem: a notification given up, a signature that does not verify,
     differences in the projections, an event not confirmed, nothing found under an id, or a failure
     (database or broker unreachable)
  2  usage error: unknown command or option, a bad value, invalid configuration

Configuration comes from the environment and ./.env, as for the service (.env.example); flags such as
--database-url override it. --json prints one JSON document on stdout (events watch: one per line);
messages go to stderr. Progress bars appear on stderr only when it is a terminal and without --json.`;

/** The whole command line; one program per run (no module-level state). */
export function buildProgram(io: CliIo, state: CliState): Command {
  const program = new Command('notification-receiver')
    .description('Operator and developer tools of the payment notification receiver.')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    })
    .showHelpAfterError('(add --help for usage)')
    .addHelpText('after', EXIT_CODES_HELP);
  registerSimulate(program, io, state);
  registerInspect(program, io, state);
  registerVerify(program, io, state);
  registerEvents(program, io, state);
  registerReproject(program, io, state);
  registerQuarantine(program, io, state);
  registerPurge(program, io, state);
  registerReconcile(program, io, state);
  registerOrders(program, io, state);
  registerHistory(program, io, state);
  return program;
}

/** Runs one command line (arguments after the program name) and returns its exit code. */
export async function runCli(args: readonly string[], io: CliIo = processIo()): Promise<ExitCode> {
  const state: CliState = { exitCode: EXIT_OK };
  const program = buildProgram(io, state);
  try {
    await program.parseAsync([...args], { from: 'user' });
    return state.exitCode;
  } catch (error) {
    // --help and --version end in a CommanderError with exit code 0; every other one is a usage error.
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    if (error instanceof CliError) {
      io.stderr.write(`error: ${error.message}\n`);
      return error.exitCode;
    }
    io.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT_FAILURE;
  }
}

/**
 * Exits once stdout has taken all that was written to it: a pipe whose reader is slower than the command (a Node
 * parent, say) holds only so much, the rest waits in the process, and process.exit would drop it. The empty
 * write's callback runs after every write before it.
 */
function exitAfterOutput(code: number): void {
  process.stdout.write('', () => process.exit(code));
}

/** The process entry (`node dist/cli/index.js`, and bin/notification-receiver.js once it has built). */
export function main(): void {
  loadDotEnv();
  runCli(process.argv.slice(2)).then(exitAfterOutput, (error: unknown) => {
    process.stderr.write(`error: ${(error as Error).message}\n`);
    exitAfterOutput(EXIT_FAILURE);
  });
}

if (require.main === module) main();
