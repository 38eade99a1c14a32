/**
 * A small Dockerfile reader (enough for this repository's Dockerfile: no heredocs) and a
 * .dockerignore matcher, so the image recipe can be checked without a Docker engine.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../support/build';

export interface Instruction {
  keyword: string;
  /** Flags such as --from=build or --mount=type=cache,... */
  flags: Record<string, string>;
  /** The rest of the line, after the flags. */
  rest: string;
}

export interface Stage {
  image: string;
  name: string | undefined;
  instructions: Instruction[];
}

export function readDockerfile(file = path.join(ROOT, 'Dockerfile')): Stage[] {
  // Join continuation lines, drop comments and blank lines.
  const lines = readFileSync(file, 'utf8')
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const globalArgs: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const line of lines) {
    const [, keyword = '', rawRest = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    const flags: Record<string, string> = {};
    let rest = rawRest;
    for (let flag = /^--([\w-]+)(?:=(\S*))?\s+/.exec(rest); flag; flag = /^--([\w-]+)(?:=(\S*))?\s+/.exec(rest)) {
      flags[flag[1] ?? ''] = flag[2] ?? '';
      rest = rest.slice(flag[0].length);
    }
    const instruction: Instruction = { keyword: keyword.toUpperCase(), flags, rest };
    if (instruction.keyword === 'FROM') {
      const [, image = '', name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest) ?? [];
      const resolved = image.replace(/\$\{?(\w+)\}?/g, (_m, arg: string) => globalArgs[arg] ?? '');
      stages.push({ image: resolved, name, instructions: [] });
    } else if (stages.length === 0) {
      if (instruction.keyword !== 'ARG') throw new Error(`only ARG may come before FROM, not ${keyword}`);
      const [, arg = '', value = ''] = /^(\w+)(?:=(.*))?$/.exec(rest) ?? [];
      globalArgs[arg] = value;
    } else {
      stages[stages.length - 1]?.instructions.push(instruction);
    }
  }
  return stages;
}

/** Exec-form arguments (`["node", "x.js"]`) of CMD/ENTRYPOINT/HEALTHCHECK CMD, or undefined for shell form. */
export function execForm(rest: string): string[] | undefined {
  if (!rest.trim().startsWith('[')) return undefined;
  const parsed: unknown = JSON.parse(rest);
  return Array.isArray(parsed) && parsed.every((a) => typeof a === 'string') ? parsed : undefined;
}

/** COPY/ADD arguments: sources and destination (JSON or space-separated form). */
export function copyArgs(rest: string): { sources: string[]; dest: string } {
  const args = execForm(rest) ?? rest.split(/\s+/).filter((a) => a !== '');
  const dest = args[args.length - 1];
  if (args.length < 2 || dest === undefined) throw new Error(`COPY needs a source and a destination: ${rest}`);
  return { sources: args.slice(0, -1), dest };
}

function globToRegExp(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] ?? '';
    if (c === '*' && pattern[i + 1] === '*') {
      source += '.*';
      i++;
    } else if (c === '*') source += '[^/]*';
    else if (c === '?') source += '[^/]';
    else source += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}

/** Whether the build context leaves `relativePath` out (a path is out when it or a parent matches). */
export function dockerignored(relativePath: string, file = path.join(ROOT, '.dockerignore')): boolean {
  const rules = readFileSync(file, 'utf8')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => ({
      negate: l.startsWith('!'),
      pattern: globToRegExp(path.posix.normalize(l.replace(/^!/, '').replace(/^\//, ''))),
    }));
  const parts = path.posix.normalize(relativePath).replace(/^\.\//, '').split('/');
  const candidates = parts.map((_p, i) => parts.slice(0, i + 1).join('/'));
  let ignored = false;
  for (const rule of rules) {
    if (candidates.some((c) => rule.pattern.test(c))) ignored = !rule.negate;
  }
  return ignored;
}
