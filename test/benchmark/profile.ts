/**
 * `npm run bench -- --profile`: where Postgres's work per new notification goes, statement by statement and
 * relation by relation (issue 58's item 1).
 *
 * On a cluster of its own (benchCluster.ts: pg_stat_statements and auto_explain loaded), the built service as the
 * default mode runs it (relay on, a consumer bound, the chart's flags and memory limit), warmed up, then a window:
 * idle (every backend's statistics flushed: PostgreSQL 15 flushes an idle backend's after 10 s), a closed loop of
 * BENCH_SECONDS, until the relay has published every event, idle again. What that window wrote is divided by the
 * new notifications it recorded (rows of `notifications`):
 * - by statement (pg_stat_statements): calls, rows, execution and planning time, WAL records and bytes;
 * - by table (pg_stat_user_tables, partitions under their parent): row inserts, updates (HOT or not), deletes;
 * - by relation file (pg_waldump over the window's WAL, profileWal.ts): heap and index records, index entries,
 *   bytes, full-page images; autovacuum's work in the window counts too;
 * - WAL in all (pg_stat_wal): records, bytes, writes, flushes and their time;
 * - the CPU of the database's backends and of the server's own processes (/proc);
 * then a second closed loop of 3 s with auto_explain on (ANALYZE, BUFFERS, WAL, nested statements): each prepared
 * statement's plan nodes summed over every run, so the write's time and WAL are split by the table it writes. Its
 * times carry the instrumentation's cost: read them as shares, not as the statement's time.
 * Prints a table per view, then one JSON line.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { closedLoop, openLoop, take, workload } from './load';
import { RATE, SECONDS } from './options';
import { onOwnCluster, type BenchCluster } from './benchCluster';
import { addWalLine, emptyWindow, type WalWindow } from './profileWal';
import { startService, stop } from './receivers';
import { cpuMeter, perItemUs, receiverSubjects } from './resources';
import { serviceCounters, recorderFigures } from './serviceMetrics';
import { sleep } from '../support/wait';

/** An idle backend flushes its statistics after 10 s (PostgreSQL 15's PGSTAT_IDLE_INTERVAL). */
const STATS_FLUSH_MS = 11_000;
const EXPLAIN_SECONDS = 3;

type Row = Record<string, string | number | null>;

export const runProfile = (): Promise<void> =>
  onOwnCluster(true, async ({ cluster, suffix, exchange, consumer, cgroup }) => {
    const database = `bench_profile_${suffix}`;
    const service = await startService(cluster.url(database), exchange, cgroup);
    const db = new pg.Client({ connectionString: cluster.url(database) });
    try {
      await db.connect();
      await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      progress('warming up');
      await openLoop(service.port, take(workload(`${suffix}warm`), RATE * 10), RATE, 10);
      await closedLoop(service.port, workload(`${suffix}warm2`), 5);
      await published(db);
      await sleep(STATS_FLUSH_MS);
      const before = await snapshot(db);
      await db.query('SELECT pg_stat_statements_reset()');
      const countersBefore = await serviceCounters(service.adminPort);
      const meter = cpuMeter(receiverSubjects(service.child.pid as number, consumer.pid as number, [database]));
      progress(`measuring: closed loop of ${SECONDS} s, then until every event is published`);
      const loop = await closedLoop(service.port, workload(`${suffix}run`), SECONDS);
      const countersAfter = await serviceCounters(service.adminPort);
      await published(db);
      await sleep(STATS_FLUSH_MS);
      const cpu = meter.stop();
      const statements = (await db.query<Row>(STATEMENTS_SQL)).rows;
      const after = await snapshot(db);
      progress('reading the window of WAL');
      const wal = await walWindow(cluster, before.lsn, after.lsn);
      const files = (await db.query<Row>(RELATIONS_SQL)).rows;
      progress(`auto_explain: closed loop of ${EXPLAIN_SECONDS} s`);
      const logStart = readFileSync(cluster.log).length;
      await setExplain(db, true);
      await closedLoop(service.port, workload(`${suffix}explain`), EXPLAIN_SECONDS);
      await setExplain(db, false);
      await published(db);
      const plans = explained(readFileSync(cluster.log).subarray(logStart).toString('utf8'));
      printProfile({
        loop,
        recorder: recorderFigures(countersBefore, countersAfter),
        statements,
        tables: diffTables(before.tables, after.tables),
        walStats: diffRow(before.wal, after.wal),
        wal,
        files,
        cpu: { backends: cpu.groups.postgres ?? 0, server: cpu.groups.postgresServer ?? 0 },
        plans,
      });
    } finally {
      await db.end().catch(() => undefined);
      await stop(service.child);
    }
  });

const progress = (line: string): void => void process.stderr.write(`profile: ${line}\n`);

/** Waits until the relay has published every event (or 60 s). */
async function published(db: pg.Client): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const { rows } = await db.query<{ n: number }>(
      `SELECT ((SELECT count(*) FROM outbox_events WHERE xid > (SELECT xid FROM outbox_cursor) AND published_at IS NULL) + (SELECT count(*) FROM outbox_held))::int AS n`,
    );
    if (rows[0]?.n === 0) return;
    await sleep(100);
  }
}

const STATEMENTS_SQL = `
  SELECT calls::float8, rows::float8, total_exec_time AS exec_ms, total_plan_time AS plan_ms,
         wal_records::float8, wal_fpi::float8, wal_bytes::float8, shared_blks_hit::float8, shared_blks_dirtied::float8,
         regexp_replace(query, '\\s+', ' ', 'g') AS query
    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
   ORDER BY total_exec_time DESC`;

/** Every table's row counts, partitions under their parent; the WAL's totals; and where the WAL is now. */
async function snapshot(db: pg.Client) {
  const tables = (
    await db.query<Row>(`
      SELECT coalesce(parent.relname, t.relname) AS relname,
             sum(t.n_tup_ins)::float8 AS inserts, sum(t.n_tup_upd - t.n_tup_hot_upd)::float8 AS updates,
             sum(t.n_tup_hot_upd)::float8 AS hot_updates, sum(t.n_tup_del)::float8 AS deletes
        FROM pg_stat_user_tables t
        LEFT JOIN pg_inherits i ON i.inhrelid = t.relid LEFT JOIN pg_class parent ON parent.oid = i.inhparent
       GROUP BY 1`)
  ).rows;
  const [wal] = (
    await db.query<Row>(`SELECT wal_records::float8, wal_fpi::float8, wal_bytes::float8, wal_buffers_full::float8,
                                wal_write::float8, wal_sync::float8, wal_write_time, wal_sync_time FROM pg_stat_wal`)
  ).rows;
  const [{ lsn } = { lsn: '' }] = (await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows;
  return { tables, wal: wal ?? {}, lsn };
}

const num = (value: string | number | null | undefined): number => Number(value ?? 0);

function diffRow(before: Row, after: Row): Record<string, number> {
  return Object.fromEntries(Object.keys(after).map((key) => [key, num(after[key]) - num(before[key])]));
}

/** A table's rows written in the window (its partitions' with it). */
interface TableCounts {
  table: string;
  inserts: number;
  updates: number;
  hotUpdates: number;
  deletes: number;
}

function diffTables(before: Row[], after: Row[]): TableCounts[] {
  const old = new Map(before.map((row) => [String(row.relname), row]));
  return after
    .map((row) => {
      const was = old.get(String(row.relname)) ?? {};
      const change = (key: string): number => num(row[key]) - num(was[key]);
      return {
        table: String(row.relname),
        inserts: change('inserts'),
        updates: change('updates'),
        hotUpdates: change('hot_updates'),
        deletes: change('deletes'),
      };
    })
    .filter((t) => t.inserts + t.updates + t.hotUpdates + t.deletes > 0);
}

/** Every relation file of the database, named by its relation and, for a partition's, its parent's. */
const RELATIONS_SQL = `
  SELECT pg_relation_filenode(c.oid)::bigint::float8 AS filenode, c.relkind::text AS kind,
         coalesce(parent.relname, c.relname) AS relation,
         CASE WHEN c.relkind = 'i' THEN coalesce(pt.relname, t.relname) END AS of_table
    FROM pg_class c
    LEFT JOIN pg_inherits i ON i.inhrelid = c.oid LEFT JOIN pg_class parent ON parent.oid = i.inhparent
    LEFT JOIN pg_index x ON x.indexrelid = c.oid LEFT JOIN pg_class t ON t.oid = x.indrelid
    LEFT JOIN pg_inherits ti ON ti.inhrelid = t.oid LEFT JOIN pg_class pt ON pt.oid = ti.inhparent
   WHERE pg_relation_filenode(c.oid) IS NOT NULL`;

/** pg_waldump over [from, to) of the cluster's WAL, counted by relation file. */
async function walWindow(cluster: BenchCluster, from: string, to: string): Promise<WalWindow> {
  const window = emptyWindow();
  const dump = spawn(path.join(cluster.bin, 'pg_waldump'), ['-p', cluster.walDir, '-s', from, '-e', to], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  for await (const line of createInterface({ input: dump.stdout })) addWalLine(window, line);
  await new Promise((resolve) => (dump.exitCode === null ? dump.once('exit', resolve) : resolve(undefined)));
  return window;
}

async function setExplain(db: pg.Client, on: boolean): Promise<void> {
  await db.query(
    `ALTER SYSTEM ${on ? 'SET auto_explain.log_min_duration = 0' : 'RESET auto_explain.log_min_duration'}`,
  );
  await db.query('SELECT pg_reload_conf()');
  // Each backend reads the new setting at its next command; give the reload a moment to reach them.
  await sleep(500);
}

/** A plan node as auto_explain's JSON gives it. */
interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Function Name'?: string;
  'Actual Total Time'?: number;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'WAL Records'?: number;
  'WAL Bytes'?: number;
  Plans?: PlanNode[];
}
interface Explained {
  'Query Text': string;
  Plan: PlanNode;
  Triggers?: Array<{ 'Trigger Name': string; Relation: string; Time: number; Calls: number }>;
}

/** By statement (its name: what its text starts with), runs, time, and the sums of its nodes by what they are. */
export interface PlanSummary {
  runs: number;
  ms: number;
  nodes: Map<string, { ms: number; rows: number; walBytes: number }>;
  triggers: Map<string, { ms: number; calls: number }>;
}

/** auto_explain's JSON plans in a stretch of the server's log, summed by statement. */
function explained(log: string): Map<string, PlanSummary> {
  const summaries = new Map<string, PlanSummary>();
  const starts = [...log.matchAll(/LOG: {2}duration: ([\d.]+) ms {2}plan:\n/g)];
  starts.forEach((start, i) => {
    const from = (start.index ?? 0) + start[0].length;
    const end = starts[i + 1]?.index ?? log.length;
    const block = log.slice(from, end);
    const json = block.slice(0, block.lastIndexOf('}') + 1);
    let plan: Explained;
    try {
      plan = JSON.parse(json) as Explained;
    } catch {
      return;
    }
    const name = statementName(plan['Query Text']);
    const summary = summaries.get(name) ?? { runs: 0, ms: 0, nodes: new Map(), triggers: new Map() };
    summary.runs++;
    summary.ms += Number(start[1]);
    const visit = (node: PlanNode): void => {
      const what = `${node['Node Type']}${node['Relation Name'] ? ` on ${node['Relation Name']}` : ''}`;
      const loops = node['Actual Loops'] ?? 1;
      const own = summary.nodes.get(what) ?? { ms: 0, rows: 0, walBytes: 0 };
      // A node's time includes its children's: a ModifyTable's child is its rows' JSON.
      summary.nodes.set(what, {
        ms: own.ms + (node['Actual Total Time'] ?? 0) * loops,
        rows: own.rows + (node['Actual Rows'] ?? 0) * loops,
        walBytes: own.walBytes + (node['WAL Bytes'] ?? 0),
      });
      for (const child of node.Plans ?? []) visit(child);
    };
    visit(plan.Plan);
    for (const trigger of plan.Triggers ?? []) {
      const key = `${trigger['Trigger Name']} on ${trigger.Relation}`;
      const own = summary.triggers.get(key) ?? { ms: 0, calls: 0 };
      summary.triggers.set(key, { ms: own.ms + trigger.Time, calls: own.calls + trigger.Calls });
    }
    summaries.set(name, summary);
  });
  return summaries;
}

/** A statement's short name: the recorder's by what it does, else its first words. */
export function statementName(query: string): string {
  const text = query.replace(/\s+/g, ' ').trim();
  if (text.includes('notifications_added')) return 'record: write';
  if (text.includes('pg_advisory_xact_lock')) return 'record: lock';
  // pg_stat_statements gives the text with its constants as $n: the read is known by its ids' series.
  if (text.includes('generate_series')) return 'record: read';
  if (text.includes('deliveries_added')) return 'record: deliveries only';
  if (text.includes('UPDATE "outbox_cursor" SET')) return 'relay: cursor';
  if (text.includes('"o"."message"') && text.includes('pg_snapshot_xmin')) return 'relay: read';
  return text.slice(0, 70);
}

interface ProfileFigures {
  loop: { rps: number; requests: number };
  recorder: ReturnType<typeof recorderFigures>;
  statements: Row[];
  tables: TableCounts[];
  walStats: Record<string, number>;
  wal: WalWindow;
  files: Row[];
  cpu: { backends: number; server: number };
  plans: Map<string, PlanSummary>;
}

const fixed = (value: number, digits = 2): string => value.toFixed(digits);
const pad = (text: string, width: number): string => text.padEnd(width);
const left = (text: string, width: number): string => text.padStart(width);

function printProfile(f: ProfileFigures): void {
  const notifications = f.tables.find((t) => t.table === 'notifications')?.inserts ?? 0;
  const per = (value: number): number => value / Math.max(1, notifications);
  const out: string[] = [];
  const execTotal = f.statements.reduce((sum, s) => sum + num(s.exec_ms), 0);
  out.push(
    `\nProfile: ${notifications} new notifications in the window (closed loop ${fixed(f.loop.rps, 0)}/s, ` +
      `${f.recorder.notificationsPerTransaction} a transaction)`,
    `Postgres CPU per new notification (/proc): the database's backends ${perItemUs(f.cpu.backends, notifications)} µs, ` +
      `the server's own processes ${perItemUs(f.cpu.server, notifications)} µs; statements' execution ` +
      `${fixed((1000 * per(execTotal)) | 0, 0)} µs`,
    '\nBy statement (pg_stat_statements), per new notification:',
    `${pad('statement', 72)}${left('calls', 8)}${left('rows', 7)}${left('exec µs', 9)}${left('plan µs', 9)}${left('share', 7)}${left('WAL rec', 9)}${left('WAL B', 8)}${left('FPI', 6)}`,
  );
  for (const s of f.statements.slice(0, 16)) {
    out.push(
      `${pad(statementName(String(s.query)), 72)}${left(fixed(per(num(s.calls)), 3), 8)}${left(fixed(per(num(s.rows))), 7)}` +
        `${left(fixed(1000 * per(num(s.exec_ms)), 1), 9)}${left(fixed(1000 * per(num(s.plan_ms)), 1), 9)}` +
        `${left(`${fixed((100 * num(s.exec_ms)) / Math.max(1, execTotal), 0)} %`, 7)}` +
        `${left(fixed(per(num(s.wal_records)), 1), 9)}${left(fixed(per(num(s.wal_bytes)), 0), 8)}${left(fixed(per(num(s.wal_fpi)), 2), 6)}`,
    );
  }
  out.push('\nBy table (pg_stat_user_tables), rows per new notification:');
  out.push(`${pad('table', 26)}${left('inserts', 9)}${left('updates', 9)}${left('HOT', 7)}${left('deletes', 9)}`);
  for (const t of [...f.tables].sort((a, b) => b.inserts + b.updates - (a.inserts + a.updates))) {
    out.push(
      `${pad(t.table, 26)}${left(fixed(per(t.inserts)), 9)}${left(fixed(per(t.updates)), 9)}` +
        `${left(fixed(per(t.hotUpdates)), 7)}${left(fixed(per(t.deletes)), 9)}`,
    );
  }
  // The WAL by relation: partitions' files under their parent's name.
  const byName = new Map<
    string,
    { kind: string; ofTable: string; entries: number; bytes: number; fpi: number; records: Map<string, number> }
  >();
  for (const file of f.files) {
    const relation = f.wal.relations.get(num(file.filenode));
    if (relation === undefined) continue;
    const name = String(file.relation);
    const own = byName.get(name) ?? {
      kind: String(file.kind),
      ofTable: String(file.of_table ?? ''),
      entries: 0,
      bytes: 0,
      fpi: 0,
      records: new Map<string, number>(),
    };
    own.entries += relation.indexEntries;
    own.bytes += relation.bytes;
    own.fpi += relation.fullPageImages;
    for (const [kind, count] of relation.records) own.records.set(kind, (own.records.get(kind) ?? 0) + count);
    byName.set(name, own);
  }
  const named = [...byName].sort((a, b) => b[1].bytes - a[1].bytes);
  const indexes = named.filter(([, r]) => r.kind === 'i' || r.kind === 'I');
  const heaps = named.filter(([, r]) => r.kind !== 'i' && r.kind !== 'I');
  out.push(
    `\nBy relation (pg_waldump, ${fixed(f.wal.bytes / Math.max(1, notifications), 0)} B of WAL per new notification), per new notification:`,
  );
  out.push(`${pad('table', 26)}${left('WAL B', 8)}${left('FPI', 7)}  records`);
  for (const [name, r] of heaps) {
    const records = [...r.records].sort((a, b) => b[1] - a[1]).map(([k, c]) => `${k} ${fixed(per(c))}`);
    out.push(
      `${pad(name, 26)}${left(fixed(per(r.bytes), 0), 8)}${left(fixed(per(r.fpi), 3), 7)}  ${records.join(', ')}`,
    );
  }
  out.push(`${pad('index (of table)', 58)}${left('entries', 8)}${left('WAL B', 8)}${left('FPI', 7)}`);
  let entries = 0;
  for (const [name, r] of indexes) {
    entries += r.entries;
    out.push(
      `${pad(`${name} (${r.ofTable})`, 58)}${left(fixed(per(r.entries)), 8)}${left(fixed(per(r.bytes), 0), 8)}${left(fixed(per(r.fpi), 3), 7)}`,
    );
  }
  out.push(`${pad('all indexes', 58)}${left(fixed(per(entries)), 8)}`);
  const other = [...f.wal.other].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, 6);
  out.push(
    `records of no relation: ${other.map(([k, v]) => `${k} ${fixed(per(v.count))} (${fixed(per(v.bytes), 0)} B)`).join(', ')}`,
  );
  const w = f.walStats;
  out.push(
    `\npg_stat_wal per new notification: ${fixed(per(w.wal_records ?? 0), 1)} records, ${fixed(per(w.wal_bytes ?? 0), 0)} B, ` +
      `${fixed(per(w.wal_fpi ?? 0), 3)} full-page images; ${w.wal_sync} flushes (${fixed(per(w.wal_sync ?? 0), 3)} each), ` +
      `${fixed((w.wal_sync_time ?? 0) / Math.max(1, w.wal_sync ?? 0), 3)} ms a flush, writes ${fixed((1000 * (w.wal_write_time ?? 0)) / Math.max(1, notifications), 1)} µs`,
  );
  out.push(
    '\nauto_explain (ANALYZE; instrumented, so read as shares), node time summed over runs, per new notification:',
  );
  for (const [name, plan] of [...f.plans].sort((a, b) => b[1].ms - a[1].ms).slice(0, 6)) {
    out.push(`${name}: ${plan.runs} runs, ${fixed(plan.ms / Math.max(1, plan.runs), 3)} ms a run`);
    const nodes = [...plan.nodes].sort((a, b) => b[1].ms - a[1].ms).slice(0, 12);
    out.push(
      `  ${nodes.map(([k, v]) => `${k} ${fixed(v.ms / plan.runs, 3)} ms (${fixed(v.rows / plan.runs, 1)} rows${v.walBytes ? `, ${fixed(v.walBytes / plan.runs, 0)} B WAL` : ''})`).join('\n  ')}`,
    );
    for (const [k, v] of plan.triggers)
      out.push(`  trigger ${k}: ${fixed(v.ms / plan.runs, 3)} ms, ${fixed(v.calls / plan.runs, 1)} calls a run`);
  }
  process.stdout.write(`${out.join('\n')}\n`);
  process.stdout.write(
    `${JSON.stringify({
      profile: {
        notifications,
        rps: f.loop.rps,
        perTransaction: f.recorder.notificationsPerTransaction,
        cpuUs: { backends: perItemUs(f.cpu.backends, notifications), server: perItemUs(f.cpu.server, notifications) },
        statements: f.statements.slice(0, 16).map((s) => ({
          name: statementName(String(s.query)),
          calls: per(num(s.calls)),
          execUs: 1000 * per(num(s.exec_ms)),
          walBytes: per(num(s.wal_bytes)),
        })),
        tables: f.tables.map((t) => ({ ...t, inserts: per(t.inserts), updates: per(t.updates) })),
        indexEntries: Object.fromEntries(indexes.map(([name, r]) => [name, per(r.entries)])),
        walBytes: per(f.wal.bytes),
      },
    })}\n`,
  );
}
