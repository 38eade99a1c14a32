import { randomUUID } from 'node:crypto';
import amqp, { type Channel, type ChannelModel, type ConfirmChannel, type ConsumeMessage } from 'amqplib';
import { Retries } from '../domain/backoff';
import type { FailoverMetrics } from '../observability/failoverMetrics';
import type { Logger } from '../observability/logger';
import { decodeMessage, encodeMessage, entryBytes, type JournalEntry } from './journalEntries';

/**
 * The journal of recorded notifications: a short record outside the database of what the service answered 200 to
 * (docs/decisions/0021). Every replica gives it the notifications each recording transaction committed; it
 * publishes them, with publisher confirms, to a quorum queue of its own that keeps each message JOURNAL_RETENTION
 * (an hour by default) and JOURNAL_MAX_BYTES at most, the oldest dropped first. Nobody consumes it but the
 * recovery after a failover (readJournalBack), which reads it to a fence it publishes itself.
 *
 * Off the hot path: append() only queues the entries, and the intake never waits for the broker (with the broker
 * away, notifications are still answered; their entries wait in memory, within a bound, and are published once it
 * is back). So a status acknowledged in the last moments before the database dies, or while the broker is away, may
 * be missing from it: the residual the window's reconciliation covers (docs/RELIABILITY.md).
 */

export interface JournalSettings {
  /** JOURNAL_AMQP_URL: the broker, best a vhost of its own that only the service's user may read. Secret. */
  url: string;
  /** JOURNAL_QUEUE: the queue's name. */
  queue: string;
  /** JOURNAL_RETENTION: how long the queue keeps a message. */
  retentionMs: number;
  /** JOURNAL_MAX_BYTES: the queue's bound; past it the oldest messages go. */
  maxBytes: number;
}

/** How the queue is declared: a replicated quorum queue that drops what is older than the retention or past the bound. */
export const journalQueueArguments = ({ retentionMs, maxBytes }: JournalSettings): Record<string, unknown> => ({
  'x-queue-type': 'quorum',
  'x-message-ttl': retentionMs,
  'x-max-length-bytes': maxBytes,
  'x-overflow': 'drop-head',
});

/** The longest a connection to the journal's broker may take to open. */
const CONNECT_TIMEOUT_MS = 10_000;

/** A message's entries at most, in bytes: a flush of more goes in several. */
const MESSAGE_BYTES = 4 * 1024 * 1024;
/** Entries held in memory while the broker is away or slow to confirm: past it, the oldest unsent are dropped. */
const BACKLOG_BYTES = 64 * 1024 * 1024;
/** Reconnects back off from this to RECONNECT_MAX_MS, with jitter (replicas reconnect to one broker). */
const RECONNECT_FIRST_MS = 250;
const RECONNECT_MAX_MS = 15_000;

/** What a stop leaves the connection's close at least (of its `ms`). */
const CLOSE_MS = 500;

/** Waits for `work` at most `ms` (it goes on regardless). */
async function within(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

const reasonText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * Opens a connection and a confirm channel and declares the journal's queue on it. A queue that exists already
 * with other arguments (a retention changed since) is used as it is, and the log says so: RabbitMQ cannot change a
 * queue's arguments, and a policy may set them (docs/OPERATIONS.md).
 */
async function openJournal(
  settings: JournalSettings,
  name: string,
  logger: Logger,
): Promise<{ connection: ChannelModel; channel: ConfirmChannel }> {
  const connection = await amqp.connect(settings.url, {
    // A broker that accepts the connection and says nothing must not hold a recovery (or a reconnect) for ever.
    timeout: CONNECT_TIMEOUT_MS,
    clientProperties: { connection_name: name },
  });
  connection.on('error', (error: Error) =>
    logger.warn({ err: { message: error.message } }, 'journal connection error'),
  );
  try {
    let channel = await connection.createConfirmChannel();
    channel.on('error', () => undefined);
    try {
      await channel.assertQueue(settings.queue, { durable: true, arguments: journalQueueArguments(settings) });
    } catch (error) {
      if ((error as { code?: unknown }).code !== 406) throw error;
      logger.warn(
        { queue: settings.queue },
        'the journal queue exists with other arguments (JOURNAL_RETENTION or JOURNAL_MAX_BYTES changed since): its own apply',
      );
      channel = await connection.createConfirmChannel();
      channel.on('error', () => undefined);
      await channel.checkQueue(settings.queue);
    }
    return { connection, channel };
  } catch (error) {
    await connection.close().catch(() => undefined);
    throw error;
  }
}

/** One replica's writer of the journal. */
export class NotificationJournal {
  /** Entries not published yet, oldest first. */
  private unsent: JournalEntry[] = [];
  private unsentBytes = 0;
  /** Entries published and not confirmed yet. */
  private unconfirmed = 0;
  /**
   * Messages published and not settled yet. A flush waits for the last one's confirm: what commits meanwhile leaves
   * in the next message, so that the messages grow with the rate (a quorum queue's cost is mostly per message)
   * and an entry waits at most one confirm (a few milliseconds) longer.
   */
  private inFlight = 0;
  private connection: ChannelModel | null = null;
  private channel: ConfirmChannel | null = null;
  private connecting: Promise<void> | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private flushQueued = false;
  private stopped = false;
  /** Whether entries were dropped since the broker was last confirming (one log line per outage). */
  private dropping = false;
  private readonly reconnects = new Retries({ firstMs: RECONNECT_FIRST_MS, maxMs: RECONNECT_MAX_MS, jitter: 'full' });
  /** Told whenever the backlog empties, for stop(). */
  private drained: (() => void) | null = null;
  /** Messages published so far: each its messageId, for the broker's returns. */
  private published = 0;
  /** The connection closed because the broker returned a message (queueGone): closed once. */
  private redeclaring: ChannelModel | null = null;
  /** Message ids the broker returned (mandatory, and no queue took them: the journal's queue was deleted). */
  private readonly returned = new Set<string>();

  constructor(
    private readonly settings: JournalSettings,
    private readonly metrics: FailoverMetrics,
    private readonly logger: Logger,
    /** The in-memory bound (BACKLOG_BYTES; a test's smaller one). */
    private readonly backlogBytes = BACKLOG_BYTES,
  ) {}

  /** Entries given and not confirmed yet. */
  get backlog(): number {
    return this.unsent.length + this.unconfirmed;
  }

  /** Connects in the background; entries appended meanwhile wait. */
  start(): void {
    this.stopped = false;
    this.connect();
  }

  /** Takes the entries of a committed transaction; never waits and never throws. */
  append(entries: readonly JournalEntry[]): void {
    if (entries.length === 0 || this.stopped) return;
    for (const entry of entries) {
      this.unsent.push(entry);
      this.unsentBytes += entryBytes(entry);
    }
    this.dropPastBound();
    this.metrics.journalBacklog.set(this.backlog);
    // Entries of the transactions that commit in the same turn, or while a message is unconfirmed, leave together.
    if (this.inFlight === 0) this.queueFlush();
  }

  private queueFlush(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    setImmediate(() => this.flush());
  }

  /**
   * Waits for the backlog to be confirmed, then closes the connection, `ms` in all: what is left is dropped. A
   * broker that went silent (a partition: no answer, no reset) never answers the close either, so the close has
   * the last CLOSE_MS of it at most, and the socket goes with the process.
   */
  async stop(ms: number): Promise<void> {
    const closeBy = Date.now() + ms;
    if (this.backlog > 0 && this.channel)
      await within(new Promise<void>((resolve) => (this.drained = resolve)), Math.max(0, ms - CLOSE_MS));
    this.stopped = true;
    if (this.backlog > 0) this.logger.warn({ entries: this.backlog }, 'stopping with journal entries not confirmed');
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const connection = this.connection;
    this.dropped();
    if (connection)
      await within(
        connection.close().catch(() => undefined),
        Math.max(closeBy - Date.now(), Math.min(CLOSE_MS, ms)),
      );
  }

  private connect(): void {
    if (this.stopped || this.connecting || this.channel) return;
    this.connecting = openJournal(this.settings, 'payment-notification-receiver:journal', this.logger)
      .then(({ connection, channel }) => {
        if (this.stopped) {
          void connection.close().catch(() => undefined);
          return;
        }
        this.connection = connection;
        this.channel = channel;
        // RabbitMQ sends a message's return before its confirm.
        channel.on('return', (message: { properties: { messageId?: unknown } }) => {
          if (typeof message.properties.messageId === 'string') this.returned.add(message.properties.messageId);
        });
        channel.on('close', () => this.lost());
        connection.on('close', () => this.lost());
        this.reconnects.reset();
        this.metrics.journalUp.set(1);
        this.logger.info({ queue: this.settings.queue }, 'journal connected');
        this.flush();
      })
      .catch((error: unknown) => this.retryLater(error))
      .finally(() => (this.connecting = null));
  }

  private retryLater(error: unknown): void {
    if (this.stopped) return;
    const waitMs = this.reconnects.next();
    // The first failure of a run is worth a warning; the rest of the outage is in the gauge.
    if (this.reconnects.count === 1)
      this.logger.warn(
        { err: { message: reasonText(error) }, retryInMs: waitMs },
        'journal not reachable (JOURNAL_AMQP_URL): recorded notifications wait in memory',
      );
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      this.connect();
    }, waitMs);
  }

  /** The connection or channel closed: what is unconfirmed comes back through the confirm callbacks. */
  private lost(): void {
    if (!this.channel && !this.connection) return;
    this.dropped();
    if (!this.stopped) {
      this.logger.warn('journal connection closed; reconnecting');
      this.retryLater(new Error('connection closed'));
    }
  }

  private dropped(): void {
    this.channel = null;
    this.connection = null;
    this.metrics.journalUp.set(0);
  }

  /**
   * Publishes every unsent entry, in messages of MESSAGE_BYTES at most, each settled by its confirm; while messages
   * are unconfirmed it waits (the last settle flushes again).
   */
  private flush(): void {
    this.flushQueued = false;
    const channel = this.channel;
    if (!channel) {
      this.connect();
      return;
    }
    if (this.inFlight > 0) return;
    while (this.unsent.length > 0) {
      let bytes = 0;
      let count = 0;
      while (count < this.unsent.length && (count === 0 || bytes < MESSAGE_BYTES)) {
        bytes += entryBytes(this.unsent[count] as JournalEntry);
        count += 1;
      }
      const entries = this.unsent.splice(0, count);
      this.unsentBytes -= bytes;
      this.unconfirmed += entries.length;
      const messageId = `journal-${++this.published}`;
      let settled = false;
      this.inFlight += 1;
      try {
        // Mandatory: a queue deleted under the journal (to change its retention) returns the message rather than
        // confirm it into nothing.
        channel.publish(
          '',
          this.settings.queue,
          encodeMessage({ entries }),
          { persistent: true, mandatory: true, messageId, contentType: 'application/json' },
          (error) => {
            // Once per message, whatever the channel does on its way down.
            if (settled) return;
            settled = true;
            this.inFlight -= 1;
            const returned = this.returned.delete(messageId);
            this.settle(entries, error ?? (returned ? this.queueGone() : null));
          },
        );
      } catch (error) {
        settled = true;
        this.inFlight -= 1;
        this.settle(entries, error);
        break;
      }
    }
  }

  /**
   * The broker returned a message: its queue is gone. The connection is closed, so that the next one declares the
   * queue again (with this replica's arguments) and the entries are sent to it; answers the settle's error.
   */
  private queueGone(): Error {
    // Once for the connection: the other messages it returned follow the first.
    if (this.connection && this.connection === this.redeclaring) return new Error('returned: no journal queue');
    if (this.connection) {
      this.redeclaring = this.connection;
      // Nothing more goes out on it: its queue is gone.
      this.channel = null;
      this.logger.error(
        { queue: this.settings.queue },
        'the journal queue is gone (deleted?): declaring it again; the entries are sent to it once it is',
      );
      void this.connection.close().catch(() => undefined);
    }
    return new Error('returned: no journal queue');
  }

  /** A message's confirm: counted; a nack or a lost channel puts its entries back in front, to be sent again. */
  private settle(entries: JournalEntry[], error: unknown): void {
    this.unconfirmed -= entries.length;
    if (error) {
      this.unsent.unshift(...entries);
      this.unsentBytes += entries.reduce((sum, entry) => sum + entryBytes(entry), 0);
      this.dropPastBound();
    } else {
      this.metrics.journalEntries.inc({ outcome: 'confirmed' }, entries.length);
      this.dropping = false;
    }
    // The last message settled: what waited for it (or came back with a nack) goes now.
    if (this.channel && this.inFlight === 0 && this.unsent.length > 0) this.queueFlush();
    this.metrics.journalBacklog.set(this.backlog);
    if (this.backlog === 0) this.drained?.();
  }

  /** Past the bound (BACKLOG_BYTES) the oldest unsent entries go, counted: memory stays bounded whatever the broker does. */
  private dropPastBound(): void {
    let dropped = 0;
    while (this.unsentBytes > this.backlogBytes && this.unsent.length > 0) {
      this.unsentBytes -= entryBytes(this.unsent.shift() as JournalEntry);
      dropped += 1;
    }
    if (dropped === 0) return;
    this.metrics.journalEntries.inc({ outcome: 'dropped' }, dropped);
    if (!this.dropping)
      this.logger.error(
        { dropped },
        'journal backlog full while the broker is away: the oldest recorded notifications are no longer in it',
      );
    this.dropping = true;
  }
}

/** Messages the reader takes ahead of its acknowledgements, and hands on in one call at most. */
const READ_PREFETCH = 128;

const isFence = (message: ConsumeMessage, fence: string): boolean => {
  const decoded = decodeMessage(message.content);
  return 'fence' in decoded && decoded.fence === fence;
};

/** What a read back found. */
export interface JournalReadBack {
  /** Messages read before the fence. */
  messages: number;
  /** Messages that were not journal messages of this version. */
  unreadable: number;
}

/**
 * Reads the journal back, oldest first, up to a fence this call publishes, handing each message's entries to
 * `onEntries` (and how many of its entries could not be read) and acknowledging the message only once that
 * resolved: a reader that dies midway leaves the rest, and the message in hand, for the next one. What it reads
 * leaves the queue: it is what the database had lost, now recorded again, or what it still had. Fails when the
 * fence does not come back within `silenceMs` of the last message (the broker lost it, or another reader took it).
 */
export async function readJournalBack(
  settings: JournalSettings,
  onEntries: (entries: JournalEntry[], unreadable: number) => Promise<void>,
  logger: Logger,
  silenceMs = 30_000,
): Promise<JournalReadBack> {
  const { connection, channel } = await openJournal(settings, 'payment-notification-receiver:journal-reader', logger);
  let reader: Channel | null = null;
  try {
    const fence = randomUUID();
    await new Promise<void>((resolve, reject) =>
      channel.publish('', settings.queue, encodeMessage({ fence }), { persistent: true }, (error) =>
        error ? reject(new Error(`the journal's broker refused the fence: ${reasonText(error)}`)) : resolve(),
      ),
    );
    reader = await connection.createChannel();
    reader.on('error', () => undefined);
    await reader.prefetch(READ_PREFETCH);
    const consumer = reader;
    const result: JournalReadBack = { messages: 0, unreadable: 0 };
    await new Promise<void>((resolve, reject) => {
      const arrived: ConsumeMessage[] = [];
      let busy = false;
      let done = false;
      let silence: NodeJS.Timeout | undefined;
      const fail = (error: unknown): void => {
        done = true;
        clearTimeout(silence);
        reject(error instanceof Error ? error : new Error(String(error)));
      };
      const quiet = (): void => {
        clearTimeout(silence);
        silence = setTimeout(
          () => fail(new Error(`the journal's fence did not come back within ${silenceMs} ms`)),
          silenceMs,
        );
      };
      /**
       * What has arrived, handed on in one call (the entries of many messages recorded together cost far fewer
       * transactions than one message at a time), then acknowledged at once, up to the last of them.
       */
      const drain = async (): Promise<void> => {
        if (busy || done || arrived.length === 0) return;
        busy = true;
        const batch = arrived.splice(0, READ_PREFETCH);
        const entries: JournalEntry[] = [];
        let unreadable = 0;
        let fenced = false;
        for (const message of batch) {
          const decoded = decodeMessage(message.content);
          // Another reader's fence, left by one that died, is passed over.
          if ('fence' in decoded) fenced ||= decoded.fence === fence;
          else if (fenced) continue;
          else {
            result.messages += 1;
            if ('problem' in decoded) {
              result.unreadable += 1;
              logger.warn({ problem: decoded.problem }, 'a journal message could not be read: set aside');
            } else {
              entries.push(...decoded.entries);
              unreadable += decoded.unreadable;
            }
          }
        }
        try {
          if (entries.length > 0 || unreadable > 0) await onEntries(entries, unreadable);
          // Messages after our fence (recorded since the read began) stay: acknowledged up to the fence only.
          const last = fenced ? batch.findIndex((m) => isFence(m, fence)) : batch.length - 1;
          consumer.ack(batch[last] as ConsumeMessage, true);
          if (fenced) {
            done = true;
            clearTimeout(silence);
            for (const later of [...batch.slice(last + 1), ...arrived]) consumer.nack(later, false, true);
            resolve();
            return;
          }
        } catch (error) {
          fail(error);
          return;
        } finally {
          busy = false;
        }
        // The silence counts from the last batch handled: recording a large one again takes its time.
        quiet();
        void drain();
      };
      quiet();
      consumer
        .consume(
          settings.queue,
          (message) => {
            if (!message) return fail(new Error('the journal queue was deleted while being read'));
            if (done) return;
            arrived.push(message);
            quiet();
            // Messages that arrive together are handed on together.
            setImmediate(() => void drain());
          },
          { noAck: false },
        )
        .catch(fail);
    });
    return result;
  } finally {
    await reader?.close().catch(() => undefined);
    await connection.close().catch(() => undefined);
  }
}
