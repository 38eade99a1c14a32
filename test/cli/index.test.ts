import { cliEnv, runCli, runProgram } from './cliSupport';

const env = cliEnv({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/nr_cli_never_created' });

describe('command line: help and usage errors', () => {
  const commands = [
    [],
    ['simulate'],
    ['inspect'],
    ['inspect', 'order'],
    ['inspect', 'refund'],
    ['verify'],
    ['events'],
    ['events', 'replay'],
    ['events', 'watch'],
    ['reproject'],
    ['quarantine'],
    ['quarantine', 'list'],
    ['quarantine', 'retry'],
    ['purge'],
    ['reconcile'],
  ];

  it.each(commands.map((c) => [c.join(' ') || '(program)', c]))(
    'When %s is asked for --help, then it prints its usage and exits 0',
    async (_, command) => {
      const run = await runProgram([...command, '--help'], env);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`Usage: notification-receiver${command.length ? ` ${command.join(' ')}` : ''}`);
      if (command.length !== 1 || !['inspect', 'events', 'quarantine'].includes(command[0] as string)) {
        expect(run.stdout).toMatch(/Exit codes/);
      }
    },
  );

  it.each([
    ['an unknown command', ['bogus']],
    ['no command', []],
    ['an unknown option', ['purge', '--days', '3', '--bogus']],
    ['a count below 1', ['simulate', '--orders', '0']],
    ['a probability above 1', ['simulate', '--duplicates', '1.5']],
    ['a retention of 0 days', ['purge', '--days', '0']],
    ['a malformed duration', ['simulate', '--gap', 'soon']],
    ['a missing argument', ['inspect', 'order']],
    ['a replay without a selection', ['events', 'replay']],
    ['a replay of a malformed id', ['events', 'replay', '--id', 'not-a-uuid']],
    ['--dry-run with --apply', ['reproject', '--dry-run', '--apply']],
    ['quarantine retry with neither ids nor --all', ['quarantine', 'retry']],
    ['a refund of a cancelled order', ['simulate', '--cancel', '--refund', 'full']],
    ['an order id of ..', ['inspect', 'order', '..']],
    ['a refund id with a /', ['inspect', 'refund', 'a/b']],
  ])('When given %s, then it exits 2 without touching anything', async (_, args) => {
    const run = await runProgram(args, env);
    expect(run.code).toBe(2);
    expect(run.stderr).not.toBe('');
  });

  it('When the configuration is invalid, then it exits 2 naming the variable and not its value', async () => {
    const run = await runProgram(['purge', '--days', '30'], cliEnv({ DATABASE_URL: 'mysql://root:hunter2@db/x' }));
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('DATABASE_URL');
    expect(run.stderr).not.toContain('hunter2');
  });

  // The built program, as a user runs it: the exit codes reach the shell.
  it('When the built CLI is given an unknown command, then the process exits 2 and says so', async () => {
    const run = await runCli(['bogus'], env);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("unknown command 'bogus'");
  });

  it('When the database cannot be reached, then it exits 1 with the reason', async () => {
    const run = await runCli(
      ['purge', '--days', '30'],
      cliEnv({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' }),
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/error: .*(connect|ECONNREFUSED)/i);
  });
});
