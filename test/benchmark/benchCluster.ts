/**
 * A Postgres cluster of the benchmark's own, for what the machine's cluster cannot give: `pg_stat_statements` and
 * `auto_explain` (they need `shared_preload_libraries`, a restart of the server) and Postgres on the cores asked
 * (`taskset` on its processes: a backend forked later inherits the postmaster's). The machine's cluster is never
 * touched.
 *
 * Made with the server programs of the newest Debian version (postgresBinDir), in a temporary directory of the
 * server's user: `postgres` when this process is root (Postgres refuses root), as the standby pair of the fault
 * tests does; a random password (scram-sha-256), since trust would let any local user in as superuser. Its
 * settings are the machine cluster's defaults (shared_buffers 128MB, fsync and synchronous_commit on), plus, for
 * the profile, the statistics. `stop` stops it and removes the directory; a run killed before that leaves a server running, whose
 * directory (`/tmp/nr-bench-pg-*`) names it.
 */
import { execFile, fork, type ChildProcess } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import amqp from 'amqplib';
import { findUser, reaches, type ServerUser } from '../../src/embeddedPostgres/embeddedPostgresPlaces';
import { freePort } from '../support/net';
import { postgresBinDir } from '../reliability/support/standbyPair';
import { AMQP, SERVICE_MEMORY_LIMIT_MB } from './options';
import { deleteExchangeOf } from './receivers';
import { CGROUP_PREFIX, memoryCgroup, type MemoryCgroup } from './resources';

export interface BenchCluster {
  /** A database's URL as superuser (the service creates its own database, as on the machine's cluster). */
  url(database: string): string;
  /** The server's log: auto_explain's plans land there. */
  readonly log: string;
  /** The WAL directory, for pg_waldump. */
  readonly walDir: string;
  /** The server programs' directory (pg_waldump). */
  readonly bin: string;
  /** Its processes now: the postmaster and its children (the servers' own and the backends). */
  pids(): number[];
  stop(): Promise<void>;
}

/** What the profile needs beside the defaults; auto_explain stays off until a phase turns it on (ALTER SYSTEM). */
const PROFILE_SETTINGS = [
  "shared_preload_libraries = 'pg_stat_statements,auto_explain'",
  'pg_stat_statements.track = all',
  'pg_stat_statements.track_planning = on',
  'track_io_timing = on',
  'track_wal_io_timing = on',
  'auto_explain.log_min_duration = -1',
  'auto_explain.log_analyze = on',
  'auto_explain.log_buffers = on',
  'auto_explain.log_wal = on',
  'auto_explain.log_nested_statements = on',
  'auto_explain.log_format = json',
];

/**
 * Starts a cluster; with `profiling`, the statistics loaded and on (they cost each statement a little: the cores
 * mode runs without them).
 */
export async function startBenchCluster({ profiling }: { profiling: boolean }): Promise<BenchCluster> {
  const bin = postgresBinDir();
  const user = serverUser();
  const directory = mkdtempSync(path.join(os.tmpdir(), 'nr-bench-pg-'));
  const data = path.join(directory, 'data');
  const log = path.join(directory, 'server.log');
  const password = randomBytes(18).toString('base64url');
  const as = user === null ? {} : { uid: user.uid, gid: user.gid };
  const run = (program: string, args: string[]): Promise<unknown> =>
    promisify(execFile)(program, args, { ...as, cwd: directory, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
  const stop = async (): Promise<void> => {
    await run(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop']).catch(() => undefined);
    rmSync(directory, { recursive: true, force: true });
  };
  try {
    if (user !== null) {
      chownSync(directory, user.uid, user.gid);
      if (!reaches(user, directory))
        throw new Error(`the postgres user cannot reach ${directory}: set TMPDIR to a directory it can enter`);
    }
    chmodSync(directory, 0o700);
    const pwfile = path.join(directory, 'password');
    writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
    if (user !== null) chownSync(pwfile, user.uid, user.gid);
    await run(path.join(bin, 'initdb'), [
      ...['-D', data, '-U', 'postgres', '--auth=scram-sha-256', `--pwfile=${pwfile}`],
      ...['--encoding=UTF8', '--locale=C', '--no-instructions'],
    ]);
    rmSync(pwfile);
    const port = await freePort();
    appendFileSync(
      path.join(data, 'postgresql.conf'),
      [
        '',
        "listen_addresses = '127.0.0.1'",
        `port = ${port}`,
        "unix_socket_directories = ''",
        ...(profiling ? PROFILE_SETTINGS : []),
        '',
      ].join('\n'),
    );
    await run(path.join(bin, 'pg_ctl'), ['-D', data, '-l', log, '-w', 'start']);
    const postmaster = Number(readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return {
      url: (database) => `postgres://postgres:${password}@127.0.0.1:${port}/${database}`,
      log,
      walDir: path.join(data, 'pg_wal'),
      bin,
      pids: () => [postmaster, ...childrenOf(postmaster)],
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The processes whose parent is `pid` (/proc/<pid>/stat's fourth field). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return children;
}

/** The user the server runs as: `postgres` for root, else this process's own (null). */
function serverUser(): ServerUser | null {
  if (process.getuid?.() !== 0) return null;
  const user = findUser(readFileSync('/etc/passwd', 'utf8'), 'postgres');
  if (user === null) throw new Error('run as root, the benchmark needs a `postgres` user to run its cluster as');
  return user;
}

/** What a mode on a cluster of its own runs with: the cluster, a consumer bound to the run's exchange, the service's memory cgroup. */
export interface OwnCluster {
  cluster: BenchCluster;
  /** Names the run's databases, exchange and cgroup. */
  suffix: string;
  exchange: string;
  consumer: ChildProcess;
  cgroup: MemoryCgroup;
}

/**
 * Runs `work` on a cluster of its own (with the profile's statistics or without), with a consumer bound to the run's
 * exchange in a process of its own and the service's memory cgroup, as the default mode has them; removes them all
 * after, however `work` ends.
 */
export async function onOwnCluster(profiling: boolean, work: (own: OwnCluster) => Promise<void>): Promise<void> {
  const suffix = randomBytes(3).toString('hex');
  const exchange = `bench.payment.events.${suffix}`;
  const cluster = await startBenchCluster({ profiling });
  const cgroup: MemoryCgroup =
    SERVICE_MEMORY_LIMIT_MB > 0
      ? memoryCgroup(`${CGROUP_PREFIX}${suffix}`, SERVICE_MEMORY_LIMIT_MB)
      : { unavailable: 'BENCH_SERVICE_MEMORY_LIMIT_MB=0' };
  const consumer = fork(path.join(__dirname, 'run.js'), ['--consumer', exchange], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    await new Promise((resolve) => consumer.once('message', resolve));
    await work({ cluster, suffix, exchange, consumer, cgroup });
  } finally {
    consumer.disconnect();
    const cleanup = await amqp.connect(AMQP);
    await deleteExchangeOf(await cleanup.createChannel(), exchange);
    await cleanup.close();
    await cluster.stop();
    if ('remove' in cgroup) cgroup.remove();
  }
}
