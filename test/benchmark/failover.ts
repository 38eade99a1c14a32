/**
 * `npm run bench -- --failover [<notifications>]`: the recovery's time after a failover that lost <notifications>
 * (10,000 by default) acknowledged notifications (issue 54). Not a test: it prints figures.
 *
 * The built service (production mode, its relay on, its own database, exchange and journal) records that many
 * fresh notifications (the benchmark's workload, no repeats) through its public port; once the journal has
 * confirmed them all, the database forgets everything recorded since before the first, as a promoted standby
 * that missed those seconds would, its beat back where it was then. The service's own watch notices it and its
 * recovery restores every status from the journal; this measures, from the moment the database forgot: when the
 * failover was noticed, when the restoration was done (writes held until then), the entries restored a second,
 * the service's peak RSS meanwhile, and that every notification is recorded again.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import amqp from 'amqplib';
import pg from 'pg';
import { pool } from '../reliability/support/http';
import { sleep } from '../support/wait';
import { take, workload } from './load';
import { AMQP, PG, SERVICE_MEMORY_LIMIT_MB } from './options';
import { admin, deleteExchangeOf, startService, stop } from './receivers';
import { CGROUP_PREFIX, memoryCgroup, memoryMb, type MemoryCgroup } from './resources';
import { metricsText, metricTotal } from './serviceMetrics';
import { migrate } from './historyDatabases';

const progress = (line: string): void => void process.stderr.write(`failover: ${line}\n`);

/** Requests at once while the notifications are recorded. */
const CONNECTIONS = 32;

/** One signed POST to the service; resolves with the status. */
function post(port: number, body: string, signature: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/notifications',
        headers: {
          'content-type': 'application/json;charset=UTF-8',
          'opensvc-signature': signature,
          'content-length': Buffer.byteLength(body),
        },
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/**
 * What a promoted standby that missed everything recorded in this run holds: none of its rows (the database was
 * empty before it), and the beat where it was before the first.
 */
async function forgetEverything(client: pg.Client, beatAt: Date): Promise<void> {
  await client.query('BEGIN');
  for (const table of [
    'deliveries',
    'notification_variants',
    'notifications',
    'delivery_repeats',
    'outbox_events',
    'event_streams',
    'refunds',
    'orders',
    'order_owners',
    'reconciliation_checks',
  ])
    await client.query(`DELETE FROM ${table}`);
  await client.query('UPDATE database_watch SET beat = beat - 1000000, beat_at = $1', [beatAt]);
  await client.query('COMMIT');
}

export async function runFailover(count: number): Promise<void> {
  const suffix = randomBytes(3).toString('hex');
  const name = `bench_failover_${suffix}`;
  const url = `${PG}/${name}`;
  const exchange = `bench.payment.events.${suffix}`;
  const cgroup: MemoryCgroup =
    SERVICE_MEMORY_LIMIT_MB > 0
      ? memoryCgroup(`${CGROUP_PREFIX}${suffix}`, SERVICE_MEMORY_LIMIT_MB)
      : { unavailable: 'BENCH_SERVICE_MEMORY_LIMIT_MB=0' };
  const client = new pg.Client({ connectionString: url });
  let service: Awaited<ReturnType<typeof startService>> | null = null;
  try {
    await migrate(url);
    await client.connect();
    service = await startService(url, exchange, cgroup, { env: { FAILOVER_RECONCILE_WINDOW: '0' } });
    const { port, adminPort } = service;
    const before = (await client.query<{ now: Date }>('SELECT now() AS now')).rows[0]?.now ?? new Date();
    const notifications = take(
      workload(suffix, { waitingStep: true, refunds: true, repeatShare: 0, randomIds: false }),
      count,
    );
    progress(`recording ${count} notifications`);
    const recordStart = Date.now();
    const statuses = await pool(notifications, CONNECTIONS, (n) => post(port, n.body, n.signature));
    const recordSeconds = (Date.now() - recordStart) / 1000;
    const refused = statuses.filter((s) => s !== 200).length;
    if (refused > 0) throw new Error(`${refused} of ${count} notifications were not answered 200`);
    for (;;) {
      const text = await metricsText(adminPort);
      if (metricTotal(text, 'notification_journal_backlog_entries') === 0) break;
      await sleep(100);
    }
    progress('the journal holds them all; the database forgets them');
    const pid = service.child.pid ?? 0;
    let peakRssMb = memoryMb(pid, 'VmRSS');
    const sampler = setInterval(() => (peakRssMb = Math.max(peakRssMb, memoryMb(pid, 'VmRSS'))), 100);
    const forgotAt = Date.now();
    await forgetEverything(client, before);
    let row: { noticed_at: Date; restored_at: Date | null; restored: number; journal_read: number } | undefined;
    while (!row?.restored_at) {
      await sleep(50);
      row = (
        await client.query<{ noticed_at: Date; restored_at: Date | null; restored: number; journal_read: number }>(
          'SELECT noticed_at, restored_at, restored, journal_read FROM failovers ORDER BY id DESC LIMIT 1',
        )
      ).rows[0];
      if (Date.now() - forgotAt > 600_000) throw new Error('no restoration within 10 minutes');
    }
    clearInterval(sampler);
    const recorded = Number(
      (await client.query<{ n: string }>('SELECT count(*) AS n FROM notifications')).rows[0]?.n ?? 0,
    );
    const restoreSeconds = (row.restored_at.getTime() - row.noticed_at.getTime()) / 1000;
    const figures = {
      notifications: count,
      recordedPerSecond: Math.round(count / recordSeconds),
      noticedAfterMs: row.noticed_at.getTime() - forgotAt,
      restoredAfterMs: row.restored_at.getTime() - forgotAt,
      restoringMs: Math.round(restoreSeconds * 1000),
      restoredPerSecond: Math.round(row.restored / restoreSeconds),
      journalRead: row.journal_read,
      restored: row.restored,
      recordedAgain: recorded,
      peakRssMb: Math.round(peakRssMb),
    };
    process.stdout.write(
      [
        `A failover that lost ${count} acknowledged notifications (recorded at ${figures.recordedPerSecond}/s):`,
        `  noticed              ${figures.noticedAfterMs} ms after the database forgot them`,
        `  restored             ${figures.restoredAfterMs} ms after (restoring, writes held: ${figures.restoringMs} ms, ${figures.restoredPerSecond} entries/s)`,
        `  journal entries read ${figures.journalRead}, restored ${figures.restored}, recorded again ${figures.recordedAgain}`,
        `  service peak RSS     ${figures.peakRssMb} MB`,
        JSON.stringify({ failover: figures }),
        '',
      ].join('\n'),
    );
  } finally {
    if (service) await stop(service.child);
    await client.end().catch(() => undefined);
    const connection = await amqp.connect(AMQP);
    await deleteExchangeOf(await connection.createChannel(), exchange);
    await connection.close();
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    if ('remove' in cgroup) cgroup.remove();
  }
}
