import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import type { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { parsePostmasterPid } from '../../../src/embeddedPostgres/embeddedPostgres';
import { findUser, reaches, type ServerUser } from '../../../src/embeddedPostgres/embeddedPostgresPlaces';
import { query } from '../../support/database';
import { FaultProxy } from '../../support/faultProxy';
import { freePort } from '../../support/net';
import { waitUntil } from '../../support/wait';

/**
 * Two real Postgres clusters of the test's own, a primary and a streaming standby, for a failover the test
 * drives (issue 54): the standby reaches the primary through a replication proxy the test cuts, and the
 * service reaches the database through a front proxy that switches to the standby once it is promoted, as a
 * Kubernetes Service does. Everything is on loopback, on ports the OS chose, in one temporary directory of the
 * server's user (mode 0700) that `stop` removes. The machine's own cluster (5432) is never touched.
 *
 * The servers run as the `postgres` user when this process is root (Postgres refuses root), as the embedded
 * Postgres runs as `nobody`: spawned with its uid and gid, which drops root's supplementary groups. As any other
 * user, they run as that user. Each server is password-protected (scram-sha-256, a random password per pair):
 * with trust, any local user could connect as superuser and run programs as `postgres`, the owner of the
 * machine's cluster too.
 *
 * fsync stays on: the loss under test comes from WAL the standby never received, not from the OS, so turning
 * it off would not change what is lost, but it would make every commit, and in the synchronous mode every
 * acknowledgement from the standby, cheaper than on a real server, and the window's size less like one.
 */

export interface StandbyPairOptions {
  /** synchronous_standby_names='*' on the primary: a commit waits until the standby has flushed its WAL. */
  synchronous?: boolean;
}

/** How long each step took, in ms (printed by the tests, for the report). */
export interface StandbyPairTimings {
  /** `start`: both clusters made, the standby streaming and caught up, the proxies up. */
  startMs: number;
  /** From `cutReplication` until `killPrimary` returned (null until both happened). */
  cutToKillMs: number | null;
  /** `killPrimary`'s `pg_ctl -m immediate stop`. */
  killMs: number | null;
  /** `promoteStandby`: `pg_ctl -w promote` and the front proxy's switch. */
  promoteMs: number | null;
}

/** The database made on the primary, which the standby replicates. */
export const STANDBY_PAIR_DATABASE = 'notifications';
/** The role `databaseUrl` connects as: the database's owner, no superuser, as on a managed Postgres. */
export const STANDBY_PAIR_ROLE = 'receiver';

/** Where Debian's packages put each major version's server programs (postgresql-NN). */
const DEBIAN_BINARIES = '/usr/lib/postgresql';
const PROGRAMS = ['initdb', 'pg_ctl', 'pg_basebackup', 'postgres'] as const;
/** How long a step that waits for replication may take on a loaded machine before it fails naming what. */
const REPLICATION_WAIT_MS = 30_000;
/** pg_ctl's own wait for a start, stop or promotion (its default). */
const PG_CTL_WAIT_S = 60;

/** The newest major version's bin directory with every program a pair needs; throws naming what is missing. */
export function postgresBinDir(root = DEBIAN_BINARIES): string {
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((name) => /^\d+(\.\d+)?$/.test(name))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const complete = versions.find((version) =>
    PROGRAMS.every((program) => existsSync(path.join(root, version, 'bin', program))),
  );
  if (complete !== undefined) return path.join(root, complete, 'bin');
  throw new Error(
    `a standby pair needs the Postgres server programs (${PROGRAMS.join(', ')}) in ${root}/<version>/bin, ` +
      `and ${versions.length === 0 ? `${root} holds no version` : `no version of ${versions.join(', ')} has all of them`}: ` +
      "install Debian's postgresql package (`bash .ci/run` does)",
  );
}

/** The user the servers run as: `postgres` for root, else this process's own (null); throws if root has none. */
function serverUser(): ServerUser | null {
  if (process.getuid?.() !== 0) return null;
  const user = findUser(existsSync('/etc/passwd') ? readFileSync('/etc/passwd', 'utf8') : '', 'postgres');
  if (user === null)
    throw new Error(
      'a standby pair run as root needs a `postgres` user to run the servers as (Postgres refuses root), and ' +
        "/etc/passwd has none: install Debian's postgresql package (`bash .ci/run` does), or run as another user",
    );
  return user;
}

/**
 * The pair's reaper, a shell run as the servers' user in a session of its own: it waits for the end of the pipe
 * from this process, which closes however this process ends (a failed test, Ctrl-C, SIGKILL, a crashed jest
 * worker; an exit hook would miss most of these, and jest's sandboxed `process` emits no exit at all), then sends
 * each postmaster of the directory still running an immediate shutdown (SIGQUIT), once /proc shows it is that
 * cluster's (a reused pid may be the machine's own cluster), waits for it, and removes the directory. After a
 * `stop` it finds nothing left to do.
 */
const REAPER = `
cat >/dev/null
for cluster in "$1/primary" "$1/standby"; do
  pid=$(head -n 1 "$cluster/postmaster.pid" 2>/dev/null) || continue
  tr '\\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-D $cluster" || continue
  kill -QUIT "$pid" 2>/dev/null
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
done
rm -rf "$1"
`;

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** The first 8 hex digits of the current WAL file's name: the timeline the server inserts WAL on. */
export async function insertTimeline(url: string): Promise<number> {
  const [row] = await query<{ tli: string }>(url, 'SELECT substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) AS tli');
  return Number.parseInt(row?.tli ?? '', 16);
}

interface Cluster {
  /** primary or standby: its directory's name and the end of its cluster_name. */
  role: 'primary' | 'standby';
  dir: string;
  port: number;
  log: string;
  /** The postmaster's pid while it runs. */
  pid: number | null;
}

const urlOf = (user: string, password: string, port: number, database: string): string =>
  `postgres://${user}:${password}@127.0.0.1:${port}/${database}`;

export class StandbyPair {
  readonly timings: StandbyPairTimings = { startMs: 0, cutToKillMs: null, killMs: null, promoteMs: null };
  private cutAt: number | null = null;
  private stopping: Promise<void> | null = null;
  private reaper: { process: ChildProcess; gone: Promise<void> } | null = null;

  private constructor(
    /** The pair's temporary directory: each cluster's data directory and server log (`primary.log`, `standby.log`). */
    readonly directory: string,
    /** Names the pair's processes in `ps` (cluster_name `<name>-primary`, `<name>-standby`). */
    readonly name: string,
    private readonly bin: string,
    private readonly user: ServerUser | null,
    private readonly password: string,
    private readonly primary: Cluster,
    private readonly standby: Cluster,
    private readonly replication: FaultProxy,
    private readonly front: FaultProxy,
  ) {}

  /** What the service's DATABASE_URL is: the front proxy, as the database's owner (no superuser). */
  get databaseUrl(): string {
    return urlOf(STANDBY_PAIR_ROLE, this.password, this.front.port, STANDBY_PAIR_DATABASE);
  }

  /** The primary itself, as superuser (the test's direct reads: pg_stat_activity, pg_stat_replication). */
  get primaryUrl(): string {
    return urlOf('postgres', this.password, this.primary.port, STANDBY_PAIR_DATABASE);
  }

  /** The standby itself, as superuser. */
  get standbyUrl(): string {
    return urlOf('postgres', this.password, this.standby.port, STANDBY_PAIR_DATABASE);
  }

  /** The primary and a standby streaming from it, caught up; fails at once naming a missing program or user. */
  static async start(options: StandbyPairOptions = {}): Promise<StandbyPair> {
    const started = Date.now();
    const bin = postgresBinDir();
    const user = serverUser();
    const directory = mkdtempSync(path.join(os.tmpdir(), 'nr-standby-'));
    const name = path.basename(directory);
    const cluster = (role: Cluster['role']): Cluster => ({
      role,
      dir: path.join(directory, role),
      port: 0,
      log: path.join(directory, `${role}.log`),
      pid: null,
    });
    const primary = cluster('primary');
    const standby = cluster('standby');
    // Both aimed at the primary once it has a port.
    const replication = new FaultProxy(0);
    const front = new FaultProxy(0);
    const pair = new StandbyPair(
      directory,
      name,
      bin,
      user,
      randomBytes(18).toString('base64url'),
      primary,
      standby,
      replication,
      front,
    );
    try {
      if (user !== null) {
        chownSync(directory, user.uid, user.gid);
        if (!reaches(user, directory))
          throw new Error(`the postgres user cannot reach ${directory}: set TMPDIR to a directory it can enter`);
      }
      chmodSync(directory, 0o700);
      pair.startReaper();
      await pair.makePrimary(options.synchronous === true);
      await pair.makeStandby();
      if (options.synchronous === true) await pair.makeSynchronous();
      await pair.waitCaughtUp();
      pair.timings.startMs = Date.now() - started;
      return pair;
    } catch (error) {
      await pair.stop();
      throw error;
    }
  }

  /** Stops the standby receiving WAL: every replication connection closed, new ones refused. */
  cutReplication(): void {
    this.cutAt = Date.now();
    this.replication.reset();
  }

  /**
   * The standby may connect again (its walreceiver retries every 5 s, wal_retrieve_retry_interval) and catches
   * up: there is no replication slot, but the primary keeps up to max_wal_size (1 GB) of WAL, far more than a test
   * writes while cut.
   */
  restoreReplication(): void {
    this.cutAt = null;
    this.replication.pass();
  }

  /** `pg_ctl -m immediate stop` of the primary: every process quits at once, without a checkpoint, as in a crash. */
  async killPrimary(): Promise<void> {
    const started = Date.now();
    await this.stopCluster(this.primary);
    this.timings.killMs = Date.now() - started;
    if (this.cutAt !== null) this.timings.cutToKillMs = Date.now() - this.cutAt;
  }

  /** `pg_ctl -w promote` of the standby, then the front proxy forwards to it and closes what it held. */
  async promoteStandby(): Promise<void> {
    const started = Date.now();
    await this.pgCtl(this.standby, ['promote']);
    this.front.switchTo(this.standby.port);
    this.timings.promoteMs = Date.now() - started;
  }

  /**
   * Waits until the standby has replayed everything the primary had written when called; refused while
   * replication is cut or the primary is down (it would never happen).
   */
  async waitCaughtUp(): Promise<void> {
    if (this.cutAt !== null) throw new Error('waitCaughtUp: replication is cut; the standby cannot catch up');
    if (this.primary.pid === null) throw new Error('waitCaughtUp: the primary is down');
    const [written] = await query<{ lsn: string }>(this.primaryUrl, 'SELECT pg_current_wal_lsn()::text AS lsn');
    await waitUntil(
      `the standby replaying the primary's WAL up to ${written?.lsn ?? '?'}`,
      async () => {
        const [row] = await query<{ caught: boolean | null }>(
          this.standbyUrl,
          'SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS caught',
          [written?.lsn],
        );
        return row?.caught === true;
      },
      REPLICATION_WAIT_MS,
      100,
    );
  }

  /** Both clusters stopped, the directory removed, the proxies closed; safe to call twice and after a failure. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await Promise.all([this.replication.stop(), this.front.stop()]);
      const stopped = await Promise.allSettled([this.stopCluster(this.standby), this.stopCluster(this.primary)]);
      const failed = stopped.find((result) => result.status === 'rejected');
      // A cluster that would not stop is left to the reaper, which stops it once this process ends.
      if (failed !== undefined) throw failed.reason;
      rmSync(this.directory, { recursive: true, force: true });
      // Nothing left for it to do: it ends.
      this.reaper?.process.stdin?.end();
      await this.reaper?.gone;
    })();
    return this.stopping;
  }

  private startReaper(): void {
    const reaper = spawn('/bin/sh', ['-c', REAPER, 'standby-pair-reaper', this.directory], {
      cwd: '/',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      stdio: ['pipe', 'ignore', 'ignore'],
      detached: true,
      ...this.asServerUser(),
    });
    const gone = new Promise<void>((resolve) => {
      reaper.once('exit', () => resolve());
      reaper.once('error', () => resolve());
    });
    // Neither the reaper nor its pipe keeps this process alive.
    reaper.unref();
    (reaper.stdin as Socket | null)?.unref();
    this.reaper = { process: reaper, gone };
  }

  /** spawn's options to run a program as the servers' user (nothing: as this process's). */
  private asServerUser(): { uid?: number; gid?: number } {
    return this.user === null ? {} : { uid: this.user.uid, gid: this.user.gid };
  }

  private async makePrimary(synchronous: boolean): Promise<void> {
    const pwfile = path.join(this.directory, 'password');
    writeFileSync(pwfile, `${this.password}\n`, { mode: 0o600 });
    if (this.user !== null) chownSync(pwfile, this.user.uid, this.user.gid);
    try {
      await this.run('initdb', [
        ...['-D', this.primary.dir, '-U', 'postgres', '--auth=scram-sha-256', `--pwfile=${pwfile}`],
        ...['--encoding=UTF8', '--locale=C', '--no-instructions'],
      ]);
    } finally {
      rmSync(pwfile, { force: true });
    }
    // A small server: a test writes little, and two of them share a loaded machine with everything else.
    // synchronous_standby_names is set once the standby streams, or the role and database below would wait.
    appendFileSync(
      path.join(this.primary.dir, 'postgresql.conf'),
      [
        '',
        `# ${this.name}: the primary of a standby pair${synchronous ? ' (synchronous once the standby streams)' : ''}`,
        "listen_addresses = '127.0.0.1'",
        "unix_socket_directories = ''",
        `cluster_name = '${this.name}-primary'`,
        'shared_buffers = 16MB',
        'wal_level = replica',
        'max_wal_senders = 5',
        'hot_standby = on',
        '',
      ].join('\n'),
    );
    await this.startCluster(this.primary, 'postgresql.conf');
    const admin = new pg.Client({ connectionString: urlOf('postgres', this.password, this.primary.port, 'postgres') });
    await admin.connect();
    try {
      await admin.query(
        `CREATE ROLE ${STANDBY_PAIR_ROLE} LOGIN PASSWORD ${pg.escapeLiteral(this.password)} NOSUPERUSER`,
      );
      await admin.query(`CREATE DATABASE ${STANDBY_PAIR_DATABASE} OWNER ${STANDBY_PAIR_ROLE}`);
    } finally {
      await admin.end();
    }
  }

  private async makeStandby(): Promise<void> {
    await this.replication.start();
    this.replication.switchTo(this.primary.port);
    // Through the replication proxy: -R writes that address (and the password) into primary_conninfo.
    // -c fast: the backup starts with a checkpoint, which spread took 95 s here and fast 2 s.
    await this.run(
      'pg_basebackup',
      [
        ...['-h', '127.0.0.1', '-p', String(this.replication.port), '-U', 'postgres'],
        ...['-D', this.standby.dir, '-R', '-X', 'stream', '-c', 'fast'],
      ],
      { PGPASSWORD: this.password },
    );
    appendFileSync(path.join(this.standby.dir, 'postgresql.auto.conf'), `cluster_name = '${this.name}-standby'\n`);
    await this.startCluster(this.standby, 'postgresql.auto.conf');
    await this.front.start();
    this.front.switchTo(this.primary.port);
    await this.replicationState('streaming', (row) => row.state === 'streaming');
  }

  private async makeSynchronous(): Promise<void> {
    await query(this.primaryUrl, "ALTER SYSTEM SET synchronous_standby_names = '*'");
    await query(this.primaryUrl, 'SELECT pg_reload_conf()');
    await this.replicationState('a synchronous standby', (row) => row.sync_state === 'sync');
  }

  /** Waits until the primary's view of the standby's replication connection passes `done`. */
  private async replicationState(
    what: string,
    done: (row: { state: string; sync_state: string }) => boolean,
  ): Promise<void> {
    await waitUntil(
      `${this.name}-standby seen by the primary as ${what}`,
      async () =>
        (
          await query<{ state: string; sync_state: string }>(
            this.primaryUrl,
            'SELECT state, sync_state FROM pg_stat_replication WHERE application_name = $1',
            [`${this.name}-standby`],
          )
        ).some(done),
      REPLICATION_WAIT_MS,
      100,
    );
  }

  /**
   * Starts a cluster on a port the OS chose (written into `conf`); another process may take that port before
   * the server binds it, so a refused bind is tried again on another.
   */
  private async startCluster(cluster: Cluster, conf: string): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      cluster.port = await freePort();
      appendFileSync(path.join(cluster.dir, conf), `port = ${cluster.port}\n`);
      try {
        await this.pgCtl(cluster, ['start', '-l', cluster.log]);
        break;
      } catch (error) {
        const taken = readText(cluster.log).includes('Address already in use');
        if (!taken || attempt === 3) throw error;
      }
    }
    const pid = parsePostmasterPid(readText(path.join(cluster.dir, 'postmaster.pid')));
    if (pid === null) throw new Error(`${this.name}-${cluster.role} started but wrote no postmaster.pid`);
    cluster.pid = pid;
  }

  /** An immediate stop of a running cluster (SIGQUIT to the postmaster if pg_ctl fails); nothing if it is down. */
  private async stopCluster(cluster: Cluster): Promise<void> {
    const pid = cluster.pid;
    if (pid === null) return;
    try {
      await this.pgCtl(cluster, ['stop', '-m', 'immediate']);
    } catch {
      if (alive(pid)) process.kill(pid, 'SIGQUIT');
      await waitUntil(`${this.name}-${cluster.role} (pid ${pid}) exiting`, () => !alive(pid), PG_CTL_WAIT_S * 1000);
    }
    cluster.pid = null;
  }

  private pgCtl(cluster: Cluster, args: string[]): Promise<string> {
    return this.run('pg_ctl', ['-D', cluster.dir, '-w', '-t', String(PG_CTL_WAIT_S), ...args], {}, cluster.log);
  }

  /**
   * Runs one of the server's programs to its end, as the server's user, without blocking the event loop (the
   * proxies in this process carry its traffic: a synchronous run through one would never end). Rejects with the
   * end of its output and of the server's log.
   */
  private run(program: string, args: string[], env: NodeJS.ProcessEnv = {}, log?: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const child = spawn(path.join(this.bin, program), args, {
        cwd: this.directory,
        // Nothing of the test's environment (PGHOST, PGDATA, secrets): where programs are, and what is given.
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
        ...this.asServerUser(),
      });
      let output = '';
      const collect = (chunk: Buffer): void => void (output = (output + chunk.toString('utf8')).slice(-4000));
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      child.on('error', reject);
      child.on('close', (code) => {
        if (code === 0) {
          resolve(output);
          return;
        }
        const logTail = log === undefined ? '' : readText(log).trim().split('\n').slice(-15).join('\n');
        reject(
          new Error(
            `${program} ${args.join(' ')} exited ${code}: ${output.trim().slice(-1500)}` +
              (logTail === '' ? '' : `\nserver log (${log}):\n${logTail}`),
          ),
        );
      });
    });
  }
}

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}
