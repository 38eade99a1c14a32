import type request from 'supertest';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/observability/logger';
import { startService, type Service } from '../../src/service';
import type { Admission } from '../../src/admin/adminListener';
import type { Clock } from '../../src/domain/clock';
import { AMQP_URL, deleteExchange, journalQueueOf, uniqueExchange } from './broker';
import { contractAgent, type ContractAgent } from './contracts';
import { createFromTemplate, testDatabase, type TestDatabase } from './database';
import { exactBytes, POS_ID, SECOND_KEY, OTHER_POS_ID, OTHER_KEY, sign } from './signing';

export interface TestService {
  service: Service;
  database: TestDatabase;
  exchange: string;
  /** The service's journal queue (JOURNAL_QUEUE): its own, deleted with its exchange. */
  journalQueue: string;
  /** Every log line the service wrote, as parsed JSON and raw text. */
  logs: string[];
  publicUrl: string;
  adminUrl: string;
  /** supertest on the public port; every answer is checked against docs/openapi.yaml. */
  public: ContractAgent;
  /** supertest on the admin port; every answer is checked against docs/openapi.yaml. */
  admin: ContractAgent;
  /** POST /notifications with a signature made with the default POS key. */
  post(body: string | Buffer, headers?: Record<string, string>): request.Test;
  stop(): Promise<void>;
}

export interface TestServiceOptions {
  env?: Record<string, string>;
  /** Reuse a database (restart scenarios); it is then not dropped by stop(). */
  database?: TestDatabase;
  databaseUrl?: string;
  /** The admin port's and the jobs' clock, for a test that drives it (startService's ServiceOptions). */
  clock?: Clock;
  /** The admin port's admission, for a test that drives its bucket's clock (startService's ServiceOptions). */
  adminAdmission?: Admission;
}

/** Starts the real service on free ports against a database and exchange of the test's own. */
export async function startTestService(options: TestServiceOptions = {}): Promise<TestService> {
  const database = options.database ?? testDatabase();
  const exchange = options.env?.AMQP_EXCHANGE ?? uniqueExchange();
  const journalQueue = options.env?.JOURNAL_QUEUE ?? journalQueueOf(exchange);
  const config = loadConfig({
    PORT: '0',
    ADMIN_PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: options.databaseUrl ?? database.url,
    SECOND_KEYS: `${POS_ID}:${SECOND_KEY},${OTHER_POS_ID}:${OTHER_KEY}`,
    ALLOWED_SOURCE_IPS: '127.0.0.1',
    AMQP_URL,
    AMQP_EXCHANGE: exchange,
    JOURNAL_QUEUE: journalQueue,
    LOG_LEVEL: 'info',
    DATABASE_TIMEOUT: '2s',
    SHUTDOWN_TIMEOUT: '5s',
    ...options.env,
  });
  const logs: string[] = [];
  const logger = createLogger(config.logLevel, { write: (line: string) => void logs.push(line) });
  await createFromTemplate(database);
  if (options.databaseUrl) await startDatabaseFor(database);
  const service = await startService(config, logger, { clock: options.clock, adminAdmission: options.adminAdmission });
  const publicUrl = `http://127.0.0.1:${service.publicPort}`;
  const adminUrl = `http://127.0.0.1:${service.adminPort}`;
  const publicAgent = contractAgent(publicUrl, 'public');
  return {
    service,
    database,
    exchange,
    journalQueue,
    logs,
    publicUrl,
    adminUrl,
    public: publicAgent,
    admin: contractAgent(adminUrl, 'admin'),
    post(body, headers = {}) {
      return publicAgent
        .post('/notifications')
        .set('Content-Type', 'application/json;charset=UTF-8')
        .set('OpenSvc-Signature', sign(body, SECOND_KEY))
        .set(headers)
        .serialize(exactBytes)
        .send(Buffer.isBuffer(body) ? body : Buffer.from(body));
    },
    async stop() {
      await service.stop();
      if (!options.database) await database.drop();
      // The relay declared the exchange, the test's own whoever named it: one that bound no consumer would leave
      // it behind.
      await deleteExchange(exchange);
    },
  };
}

/** With a proxied DATABASE_URL the migrations still need the database to exist on the real server. */
async function startDatabaseFor(database: TestDatabase): Promise<void> {
  const { ensureDatabaseExists } = await import('../../src/database/pool');
  const { migrate } = await import('../../src/database/migrations');
  await ensureDatabaseExists(database.url);
  await migrate(database.url, createLogger('silent'));
}
