/** What the service says about itself on its /metrics: recorder and event-loop busy time, GC. */
import http from 'node:http';
import { round2 } from './stats';

export interface ServiceCounters {
  /** When they were read (performance.now(), in ms): busy shares are taken over the time between two readings. */
  readAt: number;
  busySeconds: number;
  /** The service's event loop active (running callbacks), in seconds since it started. */
  eventLoopSeconds: number;
  transactions: number;
  notifications: number;
  /** Recording statements by how their batch was decided (recorder_kept_state_total, docs/decisions/0024). */
  keptState: { kept: number; read: number; guardFailed: number };
}

/** The text of the service's /metrics. */
export function metricsText(adminPort: number): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    http
      .get(`http://127.0.0.1:${adminPort}/metrics`, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

/**
 * The sum of every series of a metric whose labels include `label` (all of them when none is given;
 * for an unlabelled metric, its value), 0 when absent.
 */
export function metricTotal(text: string, name: string, label = ''): number {
  let total = 0;
  for (const [, labels = '', value] of text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`, 'gm'))) {
    if (labels.split(',').includes(label) || !label) total += Number(value);
  }
  return total;
}

/**
 * The service's garbage collections so far, all kinds together, from prom-client's histogram (which
 * records the first collection of each batch its observer is handed, so it may miss a few).
 */
export function gcSoFar(text: string) {
  const name = 'nodejs_gc_duration_seconds';
  const count = metricTotal(text, `${name}_count`);
  return {
    ms: 1000 * metricTotal(text, `${name}_sum`),
    over10Ms: count - metricTotal(text, `${name}_bucket`, 'le="0.01"'),
    over100Ms: count - metricTotal(text, `${name}_bucket`, 'le="0.1"'),
    major: metricTotal(text, `${name}_count`, 'kind="major"'),
  };
}

/** How busy the recorder and the event loop were between two readings, and the transactions' size and length. */
export function recorderFigures(before: ServiceCounters, after: ServiceCounters) {
  const windowSeconds = (after.readAt - before.readAt) / 1000;
  const busySeconds = after.busySeconds - before.busySeconds;
  const transactions = Math.max(1, after.transactions - before.transactions);
  return {
    recorderBusyPercent: Math.round((100 * busySeconds) / windowSeconds),
    eventLoopBusyPercent: Math.round((100 * (after.eventLoopSeconds - before.eventLoopSeconds)) / windowSeconds),
    notificationsPerTransaction: round2((after.notifications - before.notifications) / transactions),
    transactionMs: round2((1000 * busySeconds) / transactions),
    ...keptStateShares(before.keptState, after.keptState),
  };
}

/**
 * The shares of recording statements decided from kept state (one round trip) and of those whose guard failed
 * (run again after a read), in per cent of all of them between two readings.
 */
function keptStateShares(before: ServiceCounters['keptState'], after: ServiceCounters['keptState']) {
  const kept = after.kept - before.kept;
  const guardFailed = after.guardFailed - before.guardFailed;
  const all = Math.max(1, kept + guardFailed + after.read - before.read);
  return { keptStatePercent: Math.round((100 * kept) / all), guardFailedPercent: round2((100 * guardFailed) / all) };
}

/** The service's recorder and event-loop counters, from its /metrics. */
export async function serviceCounters(adminPort: number): Promise<ServiceCounters> {
  const text = await metricsText(adminPort);
  return {
    readAt: performance.now(),
    busySeconds: metricTotal(text, 'recorder_busy_seconds_total'),
    eventLoopSeconds: metricTotal(text, 'nodejs_eventloop_active_seconds_total'),
    transactions: metricTotal(text, 'recorder_batch_notifications_count'),
    notifications: metricTotal(text, 'recorder_batch_notifications_sum'),
    keptState: {
      kept: metricTotal(text, 'recorder_kept_state_total', 'result="kept"'),
      read: metricTotal(text, 'recorder_kept_state_total', 'result="read"'),
      guardFailed: metricTotal(text, 'recorder_kept_state_total', 'result="guard_failed"'),
    },
  };
}
