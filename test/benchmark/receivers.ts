/**
 * The receivers under load, each a process of its own: the built service (as the chart runs it),
 * the reference receiver (the floor cost of "verify and commit"), a receiver that does nothing,
 * and the downstream consumer bound to the service's exchange.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import amqp, { type Channel } from 'amqplib';
import pg from 'pg';
import { freePort } from '../support/net';
import { AMQP, KEY, PG, POS_ID, ROOT, SERVICE_NODE_FLAGS } from './options';
import type { MemoryCgroup } from './resources';
import { sleep } from '../support/wait';

/**
 * A plain node:http receiver on 127.0.0.1:port that reads each request's body whole and hands it to
 * `handle`; on SIGTERM it stops listening, runs `close` and exits. What the benchmark's own
 * receivers share, so that they differ only in what they do with a body.
 */
function bodyReceiver(
  port: number,
  handle: (body: Buffer, req: http.IncomingMessage, res: http.ServerResponse) => void,
  close: () => Promise<void> = () => Promise.resolve(),
): void {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(Buffer.concat(chunks), req, res));
  });
  server.listen(port, '127.0.0.1');
  process.on('SIGTERM', () => server.close(() => void close().then(() => process.exit(0))));
}

/** The reference receiver: the floor cost of "verify and commit". */
export async function runReference(port: number, databaseUrl: string): Promise<void> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  await pool.query('CREATE TABLE IF NOT EXISTS received (digest bytea PRIMARY KEY, body bytea NOT NULL)');
  bodyReceiver(
    port,
    (body, req, res) => {
      const header = String(req.headers['opensvc-signature'] ?? '');
      const signature = /signature=([0-9a-f]+)/i.exec(header)?.[1] ?? '';
      const expected = createHash('md5').update(body).update(KEY).digest('hex');
      if (signature.toLowerCase() !== expected) {
        res.writeHead(401).end();
        return;
      }
      const digest = createHash('sha256').update(body).digest();
      pool.query('INSERT INTO received (digest, body) VALUES ($1, $2) ON CONFLICT DO NOTHING', [digest, body]).then(
        () => res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"ok":true}'),
        () => res.writeHead(503).end(),
      );
    },
    () => pool.end(),
  );
}

/**
 * A receiver that does nothing: reads the body and answers 200, with no check and no database. Not
 * a competitor: the floor of any Node receiver on this machine and load generator, against which
 * the duplicates-only target (twice the reference's rate) can be read.
 */
export function runBare(port: number): void {
  const answer = JSON.stringify({ outcome: 'duplicate' });
  bodyReceiver(port, (_body, _req, res) => void res.writeHead(200, { 'Content-Type': 'application/json' }).end(answer));
}

/** The downstream consumer: a queue bound to the whole exchange; answers "count" with what it received. */
export async function runConsumer(exchange: string): Promise<void> {
  const connection = await amqp.connect(AMQP);
  const channel = await connection.createChannel();
  await channel.assertExchange(exchange, 'topic', { durable: true });
  const { queue } = await channel.assertQueue('', { exclusive: true });
  await channel.bindQueue(queue, exchange, '#');
  let consumed = 0;
  await channel.consume(queue, () => void consumed++, { noAck: true });
  process.on('message', () => process.send?.(consumed));
  process.on('disconnect', () => void connection.close().finally(() => process.exit(0)));
  process.send?.('ready');
}

/** Waits until `url` answers 200. */
async function waitFor(url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      http
        .get(url, (res) => {
          res.resume();
          resolve(res.statusCode === 200);
        })
        .on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${url} not ready`);
    await sleep(10);
  }
}

/** Waits until something listens on 127.0.0.1:port. */
export async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (open) return;
    await sleep(50);
  }
  throw new Error(`port ${port} never opened`);
}

/** Runs one statement on the Postgres server's `postgres` database (creating and dropping the run's databases). */
export async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: `${PG}/postgres` });
  await client.connect();
  await client.query(sql);
  await client.end();
}

export interface Service {
  child: ChildProcess;
  port: number;
  adminPort: number;
  readyMs: number;
}

/** A built tree whose service the benchmark runs, and the Node.js flags it runs it with. */
export interface ServiceBuild {
  root: string;
  nodeFlags: string[];
}

/** This tree's build (`npm run bench` builds it first), with the chart's flags. */
export const THIS_BUILD: ServiceBuild = { root: ROOT, nodeFlags: SERVICE_NODE_FLAGS };

export interface StartOptions {
  /** Writes a CPU profile of the service to bench.cpuprofile. */
  profile?: boolean;
  /** Adds to or overrides the service's settings. */
  env?: NodeJS.ProcessEnv;
  /** Whose service: this tree's unless told (the A/B mode runs another build's). */
  build?: ServiceBuild;
}

/** The journal queue of a run's service: its own, beside its exchange. */
export const journalQueueOf = (exchange: string): string => `${exchange}.journal`;

/** Deletes what a run's service made on the broker: its exchange, and its journal's queue. */
export async function deleteExchangeOf(channel: Channel, exchange: string): Promise<void> {
  await channel.deleteExchange(exchange).catch(() => undefined);
  await channel.deleteQueue(journalQueueOf(exchange)).catch(() => undefined);
}

/**
 * Starts a built service, inside the memory cgroup when there is one (it enters it before node starts), and
 * waits until it is ready; fails at once, with its exit status, if it exits first.
 */
export async function startService(
  databaseUrl: string,
  exchange: string,
  cgroup: MemoryCgroup,
  { profile = false, env = {}, build = THIS_BUILD }: StartOptions = {},
): Promise<Service> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const started = Date.now();
  const nodeFlags = [...build.nodeFlags, ...(profile ? ['--cpu-prof', '--cpu-prof-name=bench.cpuprofile'] : [])];
  const command = [process.execPath, ...nodeFlags, 'dist/main.js'];
  const [file, args] =
    'procs' in cgroup
      ? ['/bin/sh', ['-c', 'echo $$ > "$0" && exec "$@"', cgroup.procs, ...command]]
      : [command[0] as string, command.slice(1)];
  const child = spawn(file, args, {
    cwd: build.root,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      SECOND_KEYS: `${POS_ID}:${KEY}`,
      ALLOWED_SOURCE_IPS: '127.0.0.1',
      AMQP_URL: AMQP,
      AMQP_EXCHANGE: exchange,
      // The journal of this run's own (src/failover/), gone with its exchange (deleteExchangeOf).
      JOURNAL_QUEUE: journalQueueOf(exchange),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<never>((_resolve, reject) =>
    child.once('exit', (code, signal) =>
      reject(new Error(`the service in ${build.root} exited (${signal ?? code}) before it was ready`)),
    ),
  );
  exited.catch(() => undefined);
  try {
    await Promise.race([waitFor(`http://127.0.0.1:${adminPort}/readyz`), exited]);
  } catch (error) {
    await stop(child);
    throw error;
  }
  return { child, port, adminPort, readyMs: Date.now() - started };
}

/** Stops a process with SIGTERM and waits for it to exit; SIGKILL if it has not within `graceMs`. */
export async function stop(child: ChildProcess, graceMs = 30_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
