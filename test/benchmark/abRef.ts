/**
 * The A/B mode's other side: a git ref's service, built in a temporary tree of its own.
 *
 * The ref's files are exported with `git archive` into a folder under the OS temp dir (not a registered git
 * worktree: a run that is killed leaves no git state to prune, only a folder the next run removes). Its
 * node_modules are this tree's when they serve it (every package its lockfile names is in this tree's lockfile
 * at the same place, version and integrity, and nothing this tree adds sits inside one of them); otherwise it
 * gets its own `npm ci`. Then its own `npm run build`, with its own tsconfig.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A ref the A/B cannot compare with: it does not exist, has no benchmark, or does not build (exit 2). */
export class BadRef extends Error {}

/** The temporary trees' names start with this, then the pid of the run that made them. */
export const TREE_PREFIX = 'bench-ab-';

export interface RefBuild {
  /** The ref as given, and the commit it names. */
  ref: string;
  commit: string;
  /** The built tree: its dist/main.js is the service. */
  root: string;
  /** How its node_modules came to be, in words. */
  nodeModules: string;
  /** Removes the tree. */
  remove(): void;
}

export interface BuildRefOptions {
  /** The git repository the ref is read from; and this tree, whose node_modules and lockfile may serve it. */
  repository: string;
  current: string;
  /** Aborting kills whatever step is running (git, npm) and removes the tree. */
  signal?: AbortSignal;
  progress?: (line: string) => void;
}

/** A package-lock.json, as far as the reuse of node_modules needs it. */
interface Lockfile {
  packages?: Record<string, { version?: string; integrity?: string; resolved?: string; link?: boolean }>;
}

/**
 * Whether node_modules installed from `current` serve a tree whose lockfile is `ref`: every package `ref`
 * installs is at the same path with the same version and integrity in `current`, and no package `current` adds
 * is nested inside one of them (where it would shadow what `ref` resolves). A reason when not.
 */
export function reusableNodeModules(
  ref: Lockfile,
  current: Lockfile,
): { reusable: true } | { reusable: false; reason: string } {
  const [wanted, have] = [ref.packages ?? {}, current.packages ?? {}];
  for (const [where, entry] of Object.entries(wanted)) {
    if (where === '') continue;
    const mine = have[where];
    if (!mine) return { reusable: false, reason: `${where} is not in this tree's lockfile` };
    if (mine.version !== entry.version || mine.integrity !== entry.integrity || mine.resolved !== entry.resolved) {
      return { reusable: false, reason: `${where} is ${entry.version ?? '?'} there, ${mine.version ?? '?'} here` };
    }
  }
  for (const where of Object.keys(have)) {
    if (where === '' || where in wanted) continue;
    const parent = where.replace(/\/?node_modules\/(@[^/]+\/)?[^/]+$/, '');
    if (parent !== '' && parent in wanted) {
      return { reusable: false, reason: `${where} (this tree's) would shadow what ${parent} resolves there` };
    }
  }
  return { reusable: true };
}

/**
 * Runs a command to its end; resolves with its output (stdout and stderr together), rejects when it fails or the
 * signal aborts it. It runs in a process group of its own, so that an abort reaches what it started (npm's tsc).
 */
function run(
  command: string,
  args: readonly string[],
  cwd: string,
  signal: AbortSignal | undefined,
  input?: NodeJS.ReadableStream,
): Promise<string> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error('aborted'));
    const child = spawn(command, args, { cwd, detached: true, stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    if (input && child.stdin) input.pipe(child.stdin);
    const abort = (): void => {
      try {
        process.kill(-(child.pid as number), 'SIGTERM');
      } catch {
        // gone already
      }
    };
    signal?.addEventListener('abort', abort, { once: true });
    child.on('error', (error) => {
      signal?.removeEventListener('abort', abort);
      reject(error);
    });
    child.on('close', (code, killedBy) => {
      signal?.removeEventListener('abort', abort);
      if (signal?.aborted) reject(new Error('aborted'));
      else if (code === 0) resolve(output);
      else reject(new CommandFailed(`${command} ${args.join(' ')} exited ${killedBy ?? code}`, output));
    });
  });
}

class CommandFailed extends Error {
  constructor(
    message: string,
    readonly output: string,
  ) {
    super(message);
  }
}

/** The last lines of a failed command's output, to say why it failed. */
const tail = (error: unknown, lines = 15): string =>
  error instanceof CommandFailed ? `\n${error.output.trimEnd().split('\n').slice(-lines).join('\n')}` : '';

/** A file of a commit, or undefined when the commit has none. */
async function fileAt(repository: string, commit: string, file: string): Promise<string | undefined> {
  try {
    return await run('git', ['-C', repository, 'show', `${commit}:${file}`], repository, undefined);
  } catch {
    return undefined;
  }
}

/** Builds a ref's service in a temporary tree; throws BadRef when the ref cannot be compared. */
export async function buildRef(ref: string, options: BuildRefOptions): Promise<RefBuild> {
  const { repository, current, signal } = options;
  const progress = options.progress ?? (() => undefined);
  let commit: string;
  try {
    commit = (
      await run('git', ['rev-parse', '--verify', '--quiet', '--end-of-options', `${ref}^{commit}`], repository, signal)
    ).trim();
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new BadRef(`${ref}: no such commit, branch or tag in ${repository}`);
  }
  const manifest = await fileAt(repository, commit, 'package.json');
  let scripts: Record<string, string>;
  try {
    scripts = (JSON.parse(manifest ?? '{}') as { scripts?: Record<string, string> }).scripts ?? {};
  } catch {
    throw new BadRef(`${ref} (${commit.slice(0, 8)}): its package.json is not JSON`);
  }
  if (!scripts.bench || !scripts.build) {
    throw new BadRef(`${ref} (${commit.slice(0, 8)}) has no benchmark: its package.json has no bench or build script`);
  }
  const refLock = await fileAt(repository, commit, 'package-lock.json');
  if (refLock === undefined)
    throw new BadRef(`${ref} (${commit.slice(0, 8)}) has no package-lock.json to install from`);

  const root = mkdtempSync(path.join(os.tmpdir(), `${TREE_PREFIX}${process.pid}-`));
  const remove = (): void => rmSync(root, { recursive: true, force: true });
  try {
    progress(`${ref} is ${commit.slice(0, 12)}; exporting it to ${root}`);
    const archive = spawn('git', ['-C', repository, 'archive', '--format=tar', commit], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const archived = new Promise<void>((resolve, reject) =>
      archive.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`git archive exited ${code}`)))),
    );
    await Promise.all([run('tar', ['-x', '-C', root], root, signal, archive.stdout), archived]);

    const reuse = reusableNodeModules(
      JSON.parse(refLock) as Lockfile,
      JSON.parse(readFileSync(path.join(current, 'package-lock.json'), 'utf8')) as Lockfile,
    );
    let nodeModules: string;
    if (reuse.reusable) {
      symlinkSync(path.join(current, 'node_modules'), path.join(root, 'node_modules'), 'dir');
      nodeModules = "this tree's node_modules (every package its lockfile names is in this tree's, the same)";
    } else {
      nodeModules = `its own npm ci (${reuse.reason})`;
      progress(`installing: ${nodeModules}`);
      try {
        await run('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], root, signal);
      } catch (error) {
        if (signal?.aborted) throw error;
        throw new BadRef(`${ref} (${commit.slice(0, 8)}): npm ci failed${tail(error)}`);
      }
    }
    progress(`building ${ref} with its own npm run build; node_modules: ${nodeModules}`);
    try {
      await run('npm', ['run', 'build', '--silent'], root, signal);
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new BadRef(`${ref} (${commit.slice(0, 8)}) does not build: ${(error as Error).message}${tail(error)}`);
    }
    if (!existsSync(path.join(root, 'dist', 'main.js'))) {
      throw new BadRef(`${ref} (${commit.slice(0, 8)}) does not build: its build made no dist/main.js`);
    }
    return { ref, commit, root, nodeModules, remove };
  } catch (error) {
    remove();
    throw error;
  }
}

/**
 * Removes the temporary trees of earlier runs that were killed before removing their own (their pid, in the
 * name, no longer runs).
 */
export function removeLeftTrees(): void {
  for (const entry of readdirSync(os.tmpdir())) {
    const pid = Number(new RegExp(`^${TREE_PREFIX}(\\d+)-`).exec(entry)?.[1]);
    if (pid && !isRunning(pid)) rmSync(path.join(os.tmpdir(), entry), { recursive: true, force: true });
  }
}

/** Whether a process with that pid runs on this machine (a zombie, dead but not yet reaped, does not). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return !existsSync('/proc/self'); // no /proc: the signal's answer is all there is
  }
}
