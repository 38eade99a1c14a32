import http from 'node:http';
import { createAdminApp } from '../admin/adminApp';
import { brokerUrl, loadConfig, loadDotEnv } from '../config';
import { close, listen } from '../http/server';
import { createLogger } from '../observability/logger';
import { createRelayMetrics } from '../observability/metrics';
import { readOutboxBacklog } from '../outbox/outboxQueries';
import { createDb, createPool } from '../database/pool';
import { openDatabase } from '../database/bootstrap';
import { createRelay } from '../outbox/outboxRelay';
import { reportStartFailure } from './startFailure';

/**
 * `npm run relay`: the outbox relay alone, for deployments that run it separately. It serves the
 * same admin port as the service (ADMIN_PORT: /metrics with the relay and outbox series, /livez,
 * /readyz), so it is scraped and probed the same way.
 */
async function main(): Promise<void> {
  loadDotEnv();
  const config = loadConfig(process.env, { receiving: false, publishing: true });
  const logger = createLogger(config.logLevel).child({ component: 'relay' });
  const server = await openDatabase(config, logger, { prepare: false, shared: true });
  const pool = createPool(
    {
      url: server.url,
      poolMax: 2,
      timeoutMs: config.databaseTimeoutMs,
      applicationName: 'payment-notification-receiver:relay-admin',
      keyLookupsOnly: true,
    },
    logger,
  );
  const db = createDb(pool);
  const metrics = createRelayMetrics({ outboxBacklog: () => readOutboxBacklog(db) });
  const relay = createRelay({ ...config, amqpUrl: brokerUrl(config) }, server.url, metrics, logger);
  let accepting = true;
  const admin = http.createServer(
    createAdminApp({ probeDb: db, data: null, metrics, logger, isAccepting: () => accepting }),
  );
  const adminPort = await listen(admin, config.adminPort, config.host);
  relay.start();
  logger.info({ adminPort }, 'relay started');
  const stop = (): void => {
    accepting = false;
    Promise.all([close(admin, 500), relay.stop()])
      .then(() => db.destroy())
      .then(() => server.stop())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((error: unknown) => process.exit(reportStartFailure(error)));
