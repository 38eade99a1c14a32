/**
 * What a window of WAL wrote, relation by relation: `pg_waldump`'s records counted by relation file and kind
 * (a heap's inserts, updates, HOT updates; an index's entries), with their bytes and full-page images. Pure
 * parsing: the profile mode (profile.ts) runs pg_waldump and names the relation files.
 */

/** One relation file's records in the window. */
export interface RelationWal {
  /** Records by kind: `Heap INSERT`, `Heap HOT_UPDATE`, `Btree INSERT_LEAF`, ... */
  records: Map<string, number>;
  /** Records that are a new index entry (a leaf insert, a posting-list insert, a leaf page split with its item). */
  indexEntries: number;
  bytes: number;
  fullPageImages: number;
}

/** A WAL window: by relation file (its filenode), and the records with no relation (commits, ...) by kind. */
export interface WalWindow {
  relations: Map<number, RelationWal>;
  other: Map<string, { count: number; bytes: number }>;
  bytes: number;
}

export const emptyWindow = (): WalWindow => ({ relations: new Map(), other: new Map(), bytes: 0 });

const LINE = /^rmgr: (\S+)\s+len \(rec\/tot\):\s*\d+\/\s*(\d+),.*?desc: (\S+)(.*)$/;
const BLOCK = /blkref #\d+: rel \d+\/\d+\/(\d+)(?: fork \w+)? blk \d+( FPW)?/g;

/**
 * Adds one line of `pg_waldump` (PostgreSQL 15's format) to the window: a record goes to the relation of its first
 * block reference (the page it changed; an index record's other blocks are the same index's), else to `other`.
 */
export function addWalLine(window: WalWindow, line: string): void {
  const match = LINE.exec(line);
  if (!match) return;
  const [, rmgr = '', total = '0', op = '', rest = ''] = match;
  const bytes = Number(total);
  window.bytes += bytes;
  const kind = `${rmgr} ${op.replace(/[:,]$/, '')}`;
  const blocks = [...rest.matchAll(BLOCK)];
  const first = blocks[0];
  if (first === undefined) {
    const entry = window.other.get(kind) ?? { count: 0, bytes: 0 };
    window.other.set(kind, { count: entry.count + 1, bytes: entry.bytes + bytes });
    return;
  }
  const filenode = Number(first[1]);
  const relation = window.relations.get(filenode) ?? {
    records: new Map<string, number>(),
    indexEntries: 0,
    bytes: 0,
    fullPageImages: 0,
  };
  relation.records.set(kind, (relation.records.get(kind) ?? 0) + 1);
  relation.bytes += bytes;
  relation.fullPageImages += blocks.filter((block) => block[2] !== undefined).length;
  if (rmgr === 'Btree' && isIndexEntry(op, rest)) relation.indexEntries++;
  window.relations.set(filenode, relation);
}

/** A B-tree record that adds an entry: a leaf insert, a posting-list insert, or a split of a leaf (it carries the item). */
function isIndexEntry(op: string, rest: string): boolean {
  if (op === 'INSERT_LEAF' || op === 'INSERT_POST') return true;
  return (op === 'SPLIT_L' || op === 'SPLIT_R') && /level 0\b/.test(rest);
}
