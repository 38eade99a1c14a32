import { readFileSync, readlinkSync } from 'node:fs';
import {
  notOurPostmaster,
  parseProcStat,
  parseProcUids,
  type ExpectedPostmaster,
  type ProcessFacts,
  type ProcessIdentity,
} from './embeddedPostgresTrust';

/**
 * The processes local mode finds named in its files, as /proc describes them (Linux), and the one signal it
 * may send: to this cluster's postmaster, verified before each signal (issue 37).
 */

const hasProc = (): boolean => {
  try {
    readFileSync('/proc/self/stat');
    return true;
  } catch {
    return false;
  }
};

/** What /proc says of `pid`: 'gone' when no such process, 'unknown' where there is no /proc (macOS). */
export function processFacts(pid: number): ProcessFacts | 'gone' | 'unknown' {
  if (!hasProc()) return 'unknown';
  const dir = `/proc/${pid}`;
  let stat: ReturnType<typeof parseProcStat>;
  let status: string;
  let cmdline: string;
  try {
    stat = parseProcStat(readFileSync(`${dir}/stat`, 'latin1'));
    status = readFileSync(`${dir}/status`, 'latin1');
    cmdline = readFileSync(`${dir}/cmdline`, 'utf8');
  } catch {
    // It exited while being read, or was never there.
    return 'gone';
  }
  if (stat === null) return 'gone';
  let exe: string | null;
  try {
    exe = readlinkSync(`${dir}/exe`);
  } catch {
    exe = null;
  }
  return { exe, uids: parseProcUids(status), argv: cmdline.split('\0'), ...stat };
}

/** This boot's id: with a start time, what tells a process apart from a later one with the same pid. */
function bootId(): string | null {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim();
  } catch {
    return null;
  }
}

/** The identity of the process under `pid` now: 'gone', or 'unknown' without /proc. */
export function processIdentity(pid: number): { startTime: string; bootId: string } | 'gone' | 'unknown' {
  const facts = processFacts(pid);
  if (typeof facts === 'string') return facts;
  const boot = bootId();
  return boot === null ? 'unknown' : { startTime: facts.startTime, bootId: boot };
}

/** This process's identity, for the owner file; its pid alone without /proc. */
export function ownIdentity(): ProcessIdentity | { pid: number } {
  const live = processIdentity(process.pid);
  return typeof live === 'string' ? { pid: process.pid } : { pid: process.pid, ...live };
}

/**
 * What runs under the pid postmaster.pid names: this cluster's postmaster (with its parent), something
 * else (`why` it is not ours), nothing, or, without /proc, a live process that cannot be told apart.
 */
export type PidFileProcess =
  | { kind: 'ours'; pid: number; ppid: number }
  | { kind: 'foreign'; pid: number; why: string }
  | { kind: 'gone' }
  | { kind: 'unverifiable'; pid: number };

export function judgePidFileProcess(pid: number, expected: ExpectedPostmaster): PidFileProcess {
  if (pid === process.pid) return { kind: 'foreign', pid, why: 'it is this process' };
  const facts = processFacts(pid);
  if (facts === 'gone') return { kind: 'gone' };
  if (facts === 'unknown') return isAlive(pid) ? { kind: 'unverifiable', pid } : { kind: 'gone' };
  const why = notOurPostmaster(facts, expected);
  return why === null ? { kind: 'ours', pid, ppid: facts.ppid } : { kind: 'foreign', pid, why };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, owned by another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Stops this cluster's postmaster left running by a process that is gone: SIGINT (fast shutdown), then
 * SIGQUIT after 15 s. Each signal goes only to a process verified as that postmaster just before: after
 * 15 s its pid may have been freed and taken by another process.
 */
export async function stopLeftover(pid: number, expected: ExpectedPostmaster): Promise<void> {
  const ours = (): boolean => judgePidFileProcess(pid, expected).kind === 'ours';
  const gone = async (ms: number): Promise<boolean> => {
    for (const until = Date.now() + ms; Date.now() < until;) {
      if (!ours()) return true;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return !ours();
  };
  if (!ours()) return;
  process.kill(pid, 'SIGINT');
  if (await gone(15_000)) return;
  process.kill(pid, 'SIGQUIT');
  if (!(await gone(5000))) throw new Error(`the Postgres server left running (pid ${pid}) did not stop`);
}
