import { createHash } from 'node:crypto';
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { privateHome, reaches, serverUid, type ServerUser } from './embeddedPostgresPlaces';

/** The server's binaries: where they are run from, the copy a server user who cannot reach them gets, and its check. */

/** One file of the server's binaries as a copy must reproduce it. */
export interface BinaryFile {
  path: string;
  /** A regular file's size and SHA-256, or a link's target. */
  size?: number;
  sha256?: string;
  link?: string;
}

/** Every file under `base`, by its path from there, in name order. */
function walk(base: string): BinaryFile[] {
  const into: BinaryFile[] = [];
  const visit = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const file = path.join(dir, name);
      const entry = lstatSync(file);
      const relative = path.relative(base, file);
      if (entry.isDirectory()) visit(file);
      else if (entry.isSymbolicLink()) into.push({ path: relative, link: readlinkSync(file) });
      else
        into.push({
          path: relative,
          size: entry.size,
          sha256: createHash('sha256').update(readFileSync(file)).digest('hex'),
        });
    }
  };
  visit(base);
  return into;
}

/** The platform package's library links (libicu.so -> libicu.so.60.2), from the list it ships. */
function libraryLinks(nativeDir: string): Array<{ link: string; target: string }> {
  const listFile = path.join(nativeDir, 'pg-symlinks.json');
  if (!existsSync(listFile)) return [];
  const links = JSON.parse(readFileSync(listFile, 'utf8')) as Array<{ source: string; target: string }>;
  // Both are relative to the package's directory (native/lib/...).
  return links.map(({ source, target }) => ({
    link: path.relative('native', target),
    target: path.relative(path.dirname(target), source),
  }));
}

/**
 * Makes the library links in `nativeDir` (the package's postinstall script would; npm ci denies it,
 * package.json allowScripts) where they are missing.
 */
export function linkLibraries(nativeDir: string): void {
  for (const { link, target } of libraryLinks(nativeDir)) {
    const file = path.join(nativeDir, link);
    if (lstatSync(file, { throwIfNoEntry: false })) continue;
    try {
      symlinkSync(target, file);
    } catch {
      // A read-only node_modules: the start fails later and says why.
    }
  }
}

/**
 * What a copy of the binaries must hold, exactly: the installed package's files (same sizes and
 * SHA-256) and its library links, nothing more.
 */
export function expectedBinaries(nativeDir: string): BinaryFile[] {
  const links = libraryLinks(nativeDir);
  const linked = new Set(links.map((l) => l.link));
  return [
    ...walk(nativeDir).filter((f) => f.link === undefined && !linked.has(f.path)),
    ...links.map((l) => ({ path: l.link, link: l.target })),
  ];
}

const byPath = (files: readonly BinaryFile[]): BinaryFile[] =>
  [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));

/** Whether two file lists name the same files with the same contents and links, in any order (pure). */
export function sameBinaries(expected: readonly BinaryFile[], actual: readonly BinaryFile[]): boolean {
  return JSON.stringify(byPath(expected)) === JSON.stringify(byPath(actual));
}

/** Every entry under `dir`: owned by this process's user and writable by no one else. */
function writableOnlyByUs(dir: string): boolean {
  const entry = lstatSync(dir);
  if (entry.uid !== process.getuid?.() || (!entry.isSymbolicLink() && (entry.mode & 0o022) !== 0)) return false;
  return !entry.isDirectory() || readdirSync(dir).every((name) => writableOnlyByUs(path.join(dir, name)));
}

/**
 * The binaries' directory (native/, holding bin/, lib/, share/) that the server's user may run: where
 * npm installed them, or else (as root, a clone under /root) a copy in privateHome, owned by root,
 * writable by no one else, and checked file by file against the installed package before every use;
 * `copied` says why a copy was made this time.
 */
export function serverBinaries(
  nativeDir: string,
  user: ServerUser | null,
  version: string,
): { dir: string; copied: string | null } {
  linkLibraries(nativeDir);
  const copy = binariesDir(nativeDir, user, version);
  if (copy === nativeDir) return { dir: nativeDir, copied: null };
  const home = path.dirname(copy);
  const expected = expectedBinaries(nativeDir);
  const verified = (dir: string): boolean => writableOnlyByUs(dir) && sameBinaries(expected, walk(dir));
  let copied = `uid ${serverUid(user)}, the server's user, cannot reach ${nativeDir}`;
  if (existsSync(copy)) {
    if (verified(copy)) return { dir: copy, copied: null };
    copied = `the copy there differed from ${nativeDir}`;
    rmSync(copy, { recursive: true, force: true });
  }
  const partial = mkdtempSync(path.join(home, 'binaries-partial-'));
  try {
    cpSync(nativeDir, partial, { recursive: true, verbatimSymlinks: true });
    linkLibraries(partial);
    chmodTree(partial);
    if (!verified(partial))
      throw new Error(`the copy of the Postgres binaries in ${partial} differs from ${nativeDir}`);
    renameSync(partial, copy);
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    throw error;
  }
  return { dir: copy, copied };
}

/** Where the server's binaries are run from (serverBinaries), without making the copy. */
export function binariesDir(nativeDir: string, user: ServerUser | null, version: string): string {
  const installed = path.join(realpathSync(nativeDir), 'bin', 'postgres');
  if (user === null || reaches(user, installed)) return nativeDir;
  return path.join(privateHome(user), `binaries-${os.platform()}-${os.arch()}-${version}`);
}

/** Readable and runnable by all (the server's user), writable by this process's user only. */
function chmodTree(dir: string): void {
  chmodSync(dir, 0o755);
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    const entry = lstatSync(file);
    if (entry.isDirectory()) chmodTree(file);
    else if (!entry.isSymbolicLink()) chmodSync(file, entry.mode & 0o755);
  }
}
