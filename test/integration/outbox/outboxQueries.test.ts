import pg from 'pg';
import { migrate } from '../../../src/database/migrations';
import { ensureDatabaseExists } from '../../../src/database/pool';
import { createLogger } from '../../../src/observability/logger';
import { readBatch } from '../../../src/outbox/outboxQueries';
import { testDatabase, type TestDatabase } from '../../support/database';
import { waitUntil } from '../../support/wait';

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

describe("the relay's read (readBatch)", () => {
  let db: TestDatabase;
  let client: pg.Client;
  beforeAll(async () => {
    db = testDatabase();
    await ensureDatabaseExists(db.url);
    await migrate(db.url, createLogger('silent'));
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
  });
  afterAll(async () => {
    await client.end();
    await db.drop();
  });

  it('When the outbox holds many events below the cursor, then a batch reads only the range above it, whatever lies below', async () => {
    // 2,000 transactions of 5 events each (a procedure's loop commits each), all but the last 4 below the cursor.
    await client.query(`DO $$ BEGIN
      FOR t IN 1..2000 LOOP
        INSERT INTO outbox_events (id, order_id, sequence, type, message)
        SELECT gen_random_uuid(), 'O' || t || '-' || e, 1, 'order.pending', '{}' FROM generate_series(1, 5) e;
        COMMIT;
      END LOOP; END $$`);
    await client.query('ANALYZE outbox_events');
    await client.query(
      `UPDATE outbox_cursor SET xid = (SELECT xid FROM (SELECT DISTINCT xid FROM outbox_events ORDER BY xid DESC
                                                         LIMIT 5) AS last ORDER BY xid LIMIT 1)`,
    );
    const batch = readBatch(200);
    // The relay's session has bitmap scans off (src/outbox/outboxRelay.ts); the plan is the one it runs.
    await client.query('SET enable_bitmapscan = off');
    // A transaction with an id open anywhere in the cluster (another test's) holds the read below it: read again
    // until nothing older is running, and the batch is the 4 transactions above the cursor, whole.
    const plan = await waitUntil('a read of the whole range above the cursor', async () => {
      const { rows } = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${batch.sql}`,
        [...batch.parameters],
      );
      const top = rows[0]?.['QUERY PLAN'][0]?.Plan;
      return top?.['Actual Rows'] === 20 ? top : undefined;
    });
    const read = nodesOf(plan).filter((n) => n['Index Name'] === 'outbox_events_by_xid');
    expect(read.length).toBeGreaterThan(0);
    // Each walk of the index reads the rows above the cursor (20), not the 9,980 below it.
    for (const node of read) expect(node['Actual Rows'] * node['Actual Loops']).toBeLessThanOrEqual(20);
    expect(nodesOf(plan).filter((n) => n['Node Type'] === 'Seq Scan' && n['Actual Rows'] > 1)).toEqual([]);
  });
});
