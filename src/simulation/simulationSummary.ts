import type { AttemptReport, NotificationDelivery, SimulatedNotification, SimulationReport } from '../simulator';

/** What `simulate` prints: one line per answer or failed attempt as it happens, then a summary. */

/** A simulated offset since the run started, always as `+H:MM:SS` (`+0:00:02`, `+72:00:00`). */
export function formatOffset(ms: number): string {
  const total = Math.max(0, Math.round(ms / 1000));
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `+${Math.floor(total / 3600)}:${pad(Math.floor(total / 60) % 60)}:${pad(total % 60)}`;
}

/** Network errors in words. */
export const NETWORK_ERRORS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

/** What one attempt got, for humans: `connection refused`, `no answer within 10000 ms`, `503 busy`. */
export function describeAttemptResult(attempt: AttemptReport): string {
  if (attempt.status === null) {
    const error = attempt.answer ?? 'no answer';
    return NETWORK_ERRORS[error] ? `${NETWORK_ERRORS[error]} (${error})` : error;
  }
  return `${attempt.status}${attempt.answer ? ` ${attempt.answer}` : ''}`;
}

/** One failed attempt as it happens, and when the next one is due. */
export function describeFailedAttempt(
  n: SimulatedNotification,
  attempt: AttemptReport,
  nextAtMs: number | null,
): string {
  const subject = n.kind === 'order' ? `order  ${n.orderId}` : `refund ${n.refundId} of ${n.orderId}`;
  const next = nextAtMs === null ? 'no more attempts' : `next attempt at ${formatOffset(nextAtMs)}`;
  return `${formatOffset(attempt.sentAtMs).padStart(9)}  ${subject}  ${n.status}  attempt ${attempt.attempt} failed: ${describeAttemptResult(attempt)}; ${next}`;
}

/** One notification once it is answered 200 or given up. */
export function describeDelivery(d: NotificationDelivery): string {
  const subject = d.kind === 'order' ? `order  ${d.orderId}` : `refund ${d.refundId} of ${d.orderId}`;
  const last = d.attempts[d.attempts.length - 1];
  const answers = d.attempts.map((a) => (a.status === null ? 'no answer' : String(a.status)));
  const tries = `${d.attempts.length} attempt${d.attempts.length === 1 ? '' : 's'}`;
  const result = d.delivered
    ? `${last?.answer ?? '200'}`
    : `GAVE UP (${last?.status ?? 'no answer'} ${last?.answer ?? ''})`.replace(' )', ')');
  const history = d.attempts.length > 1 ? ` [${answers.join(', ')}]` : '';
  const flags = [d.copy > 1 ? 'duplicate copy' : '', d.reordered ? 'reordered' : ''].filter(Boolean).join(', ');
  return `${formatOffset(last?.sentAtMs ?? d.firstAttemptAtMs).padStart(9)}  ${subject}  ${d.status}  -> ${result}  (${tries}${history})${flags ? `  {${flags}}` : ''}`;
}

/** The summary after the run, and where to look (the admin API of a local receiver). */
export function summaryLines(report: SimulationReport, adminBase: string | null, seed: number): string[] {
  const s = report.summary;
  const lines = [
    '',
    `${s.orders} order(s), ${s.notifications} notification(s), ${s.deliveries} deliver${s.deliveries === 1 ? 'y' : 'ies'}: ` +
      `${s.delivered} answered 200, ${s.gaveUp} given up; ${s.attempts} attempt(s) in all.`,
    `Receiver outcomes: ${
      Object.entries(s.outcomes)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || 'none'
    }.`,
    `HTTP statuses: ${
      Object.entries(s.httpStatuses)
        .map(([k, v]) => `${k === 'none' ? 'no answer' : k} x${v}`)
        .join(', ') || 'none'
    }.`,
    `Seed ${seed} (repeat this run with --seed ${seed}).`,
  ];
  if (s.dropped > 0)
    lines.splice(
      2,
      0,
      `${s.dropped} notification(s) lost for good (--drop): ${report.dropped
        .slice(0, 10)
        .map((d) => `${d.kind === 'order' ? 'order' : `refund ${d.refundId} of`} ${d.orderId} ${d.status}`)
        .join(', ')}${s.dropped > 10 ? ', ...' : ''}.`,
    );
  for (const order of report.orders.slice(0, 20)) {
    const refunds = order.refunds.map((r) => `refund ${r.refundId} ${r.amount} ${r.status}`).join(', ');
    lines.push(
      `Order ${order.orderId} (${order.payMethod}, auto-receive ${order.autoReceive ? 'on' : 'off'}): should end ${order.expectedStatus}${refunds ? `; ${refunds}` : ''}` +
        (adminBase ? `\n  ${adminBase}/orders/${encodeURIComponent(order.orderId)}` : ''),
    );
  }
  if (report.orders.length > 20) lines.push(`... and ${report.orders.length - 20} more order(s) (--json lists all).`);
  return lines;
}

/** The admin API beside a local target, for the "look here" hint. */
export function adminBaseFor(url: string, adminPort: number): string | null {
  try {
    const target = new URL(url);
    return ['127.0.0.1', 'localhost', '[::1]'].includes(target.hostname)
      ? `http://${target.hostname}:${adminPort}`
      : null;
  } catch {
    return null;
  }
}
