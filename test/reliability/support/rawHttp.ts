import net from 'node:net';
import pg from 'pg';

export interface RawResult {
  /** Status of the first response, null when none came. */
  status: number | null;
  response: string;
  /** ms from connect to the server closing the connection; null if it stayed open until we gave up. */
  closedAfterMs: number | null;
  /** Bytes written before the first response byte arrived (or in all, when none came). */
  bytesWritten: number;
}

/** Bytes straight onto a socket: what an HTTP client library would refuse to send. */
export function rawRequest(
  port: number,
  bytes: Buffer | string,
  options: { halfClose?: boolean; timeoutMs?: number; chunkBytes?: number } = {},
): Promise<RawResult> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const started = Date.now();
    let response = '';
    let done = false;
    let written = 0;
    let writtenAtAnswer: number | null = null;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(response);
      resolve({
        status: match ? Number(match[1]) : null,
        response,
        closedAfterMs: closed ? Date.now() - started : null,
        bytesWritten: writtenAtAnswer ?? written,
      });
    };
    const timer = setTimeout(() => finish(false), options.timeoutMs ?? 5_000);
    socket.on('data', (chunk: Buffer) => {
      writtenAtAnswer ??= written;
      response += chunk.toString('latin1');
    });
    socket.on('error', () => undefined);
    socket.on('close', () => finish(true));
    socket.on('connect', () => {
      if (!options.chunkBytes) {
        socket.write(bytes);
        written = Buffer.byteLength(bytes);
        if (options.halfClose) socket.end();
        return;
      }
      // Paced: a few KB at a time, stopping as soon as the server answers (an oversized request is
      // refused mid-way; writing on would make the server reset the connection before we read the answer).
      const all = Buffer.from(bytes);
      let offset = 0;
      const next = (): void => {
        if (done || response !== '' || offset >= all.length) return;
        const piece = all.subarray(offset, offset + (options.chunkBytes as number));
        socket.write(piece);
        offset += piece.length;
        written = offset;
        setTimeout(next, 10);
      };
      next();
    });
  });
}

/**
 * A client sending one byte a second: the headers (body null), or complete headers then the body.
 * Resolves when the server closes the connection, or after maxMs (then closedAfterMs is null).
 */
export function slowClient(
  port: number,
  head: string,
  body: string | null,
  maxMs: number,
  everyMs = 1_000,
): Promise<RawResult> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const started = Date.now();
    const trickle = body === null ? head : body;
    let sent = 0;
    let written = 0;
    let response = '';
    let done = false;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      clearInterval(ticker);
      clearTimeout(timer);
      socket.destroy();
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(response);
      resolve({
        status: match ? Number(match[1]) : null,
        response,
        closedAfterMs: closed ? Date.now() - started : null,
        bytesWritten: written,
      });
    };
    const ticker = setInterval(() => {
      if (sent < trickle.length && socket.writable) {
        socket.write(trickle[sent] as string);
        sent += 1;
        written += 1;
      }
    }, everyMs);
    const timer = setTimeout(() => finish(false), maxMs);
    socket.on('connect', () => {
      if (body !== null) {
        socket.write(head);
        written += head.length;
      }
    });
    socket.on('data', (chunk: Buffer) => {
      response += chunk.toString('latin1');
    });
    socket.on('error', () => undefined);
    socket.on('close', () => finish(true));
  });
}

/** Rows the service wrote (notifications, quarantined bodies, deliveries), on one kept connection. */
export class RowCounter {
  private readonly client: pg.Client;
  private connected: Promise<unknown> | null = null;

  constructor(url: string) {
    this.client = new pg.Client({ connectionString: url });
  }

  async total(): Promise<number> {
    this.connected ??= this.client.connect();
    await this.connected;
    const { rows } = await this.client.query<{ n: string }>(
      `SELECT (SELECT count(*) FROM notifications) + (SELECT count(*) FROM quarantined_notifications) + (SELECT count(*) FROM deliveries) AS n`,
    );
    return Number(rows[0]?.n ?? 0);
  }

  async quarantined(): Promise<number> {
    this.connected ??= this.client.connect();
    await this.connected;
    const { rows } = await this.client.query<{ n: string }>('SELECT count(*) AS n FROM quarantined_notifications');
    return Number(rows[0]?.n ?? 0);
  }

  async close(): Promise<void> {
    if (this.connected) await this.client.end().catch(() => undefined);
  }
}

/** A request sent in part and then held open: what a slow or hostile client leaves on the server. */
export interface HeldRequest {
  /** The status of the server's answer, or null when it closed the connection without one (or we did). */
  answer: Promise<number | null>;
  close(): void;
}

export function holdRequest(port: number, head: string, bodyPart: Buffer): HeldRequest {
  const socket = net.connect(port, '127.0.0.1');
  let response = '';
  const answer = new Promise<number | null>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      response += chunk.toString('latin1');
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(response);
      if (match) resolve(Number(match[1]));
    });
    socket.on('error', () => resolve(null));
    socket.on('close', () => resolve(null));
  });
  socket.write(head);
  if (bodyPart.length > 0) socket.write(bodyPart);
  return { answer, close: () => socket.destroy() };
}
