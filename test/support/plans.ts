import { CompiledQuery, type Compilable } from 'kysely';
import type { Db } from '../../src/database/pool';

/** One node of a plan that reads a table (a scan, or a write), and the rows it produced over all its loops. */
export interface TableRead {
  relation: string;
  node: string;
  rows: number;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  Plans?: PlanNode[];
}

const planNodes = (node: PlanNode | undefined): PlanNode[] =>
  node ? [node, ...(node.Plans ?? []).flatMap(planNodes)] : [];

/**
 * Runs a query under EXPLAIN (ANALYZE) on the given pool, with that pool's own planner settings (the
 * reconciler's refuses scans it can avoid: src/database/pool.ts, keyLookupsOnly), and answers every table it read
 * and how. It runs the query: a statement that writes, writes.
 */
export async function tableReads(db: Db, query: Compilable<unknown>): Promise<TableRead[]> {
  const compiled = query.compile();
  const { rows } = await db.executeQuery<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
    CompiledQuery.raw(`EXPLAIN (ANALYZE, FORMAT JSON) ${compiled.sql}`, [...compiled.parameters]),
  );
  return planNodes(rows[0]?.['QUERY PLAN'][0]?.Plan).flatMap((n) =>
    n['Relation Name'] === undefined
      ? []
      : [{ relation: n['Relation Name'], node: n['Node Type'], rows: n['Actual Rows'] * n['Actual Loops'] }],
  );
}
