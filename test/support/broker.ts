import { randomBytes } from 'node:crypto';
import amqp, { type ChannelModel, type ConsumeMessage } from 'amqplib';
import { eventContractProblems } from './contracts';
import { sleep } from './wait';

export const AMQP_URL = process.env.TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

export const uniqueExchange = (): string => `test.payment.events.${randomBytes(4).toString('hex')}`;

/** The journal queue (JOURNAL_QUEUE) of a test's service: its own, beside its exchange, and deleted with it. */
export const journalQueueOf = (exchange: string): string => `${exchange}.journal`;

/**
 * Deletes an exchange a test made, and the journal queue of the service that published to it (journalQueueOf):
 * a no-op for what does not exist, or when the broker is away.
 */
export async function deleteExchange(exchange: string, url = AMQP_URL): Promise<void> {
  try {
    const connection = await amqp.connect(url);
    try {
      const channel = await connection.createChannel();
      await channel.deleteExchange(exchange);
      await channel.deleteQueue(journalQueueOf(exchange));
    } finally {
      await connection.close().catch(() => undefined);
    }
  } catch {
    // Nothing to clean up.
  }
}

/** Deletes a queue a test made (a no-op when it does not exist or the broker is away). */
export async function deleteQueue(queue: string, url = AMQP_URL): Promise<void> {
  try {
    const connection = await amqp.connect(url);
    try {
      const channel = await connection.createChannel();
      await channel.deleteQueue(queue);
    } finally {
      await connection.close().catch(() => undefined);
    }
  } catch {
    // Nothing to clean up.
  }
}

/**
 * A queue of the test's own bound to the exchange, collecting every message it receives. Each message is
 * checked against docs/asyncapi.yaml as it arrives; reading the messages (or stopping) throws while any
 * did not match, so no test can pass on an event that drifted from the contract.
 */
export class EventConsumer {
  private readonly received: ConsumeMessage[] = [];
  private readonly contractProblems: string[] = [];
  private connection: ChannelModel | null = null;

  constructor(
    private readonly exchange: string,
    private readonly bindingKey = '#',
    private readonly url = AMQP_URL,
  ) {}

  async start(): Promise<this> {
    this.connection = await amqp.connect(this.url);
    const channel = await this.connection.createChannel();
    await channel.assertExchange(this.exchange, 'topic', { durable: true });
    const { queue } = await channel.assertQueue('', { exclusive: true, autoDelete: true });
    await channel.bindQueue(queue, this.exchange, this.bindingKey);
    await channel.consume(queue, (message) => message && this.receive(message), { noAck: true });
    return this;
  }

  private receive(message: ConsumeMessage): void {
    try {
      this.contractProblems.push(...eventContractProblems(message));
    } catch (error) {
      // Thrown inside the broker's callback it would be lost: keep it for the test to read.
      this.contractProblems.push(`the contract could not be checked: ${(error as Error).message}`);
    }
    this.received.push(message);
  }

  private checkContract(): void {
    if (this.contractProblems.length > 0)
      throw new Error(`events do not match docs/asyncapi.yaml:\n  ${this.contractProblems.join('\n  ')}`);
  }

  /** Every message received so far; throws when one of them does not match the AsyncAPI document. */
  get messages(): ConsumeMessage[] {
    this.checkContract();
    return this.received;
  }

  bodies<T = Record<string, unknown>>(): T[] {
    return this.messages.map((m) => JSON.parse(m.content.toString('utf8')) as T);
  }

  async waitFor(count: number, timeoutMs = 15_000): Promise<ConsumeMessage[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.messages.length < count) {
      if (Date.now() > deadline) throw new Error(`expected ${count} messages, got ${this.messages.length}`);
      await sleep(25);
    }
    return this.messages;
  }

  /** Stops consuming and deletes the exchange (it belongs to the test). */
  async stop(): Promise<void> {
    if (!this.connection) return;
    const channel = await this.connection.createChannel();
    await channel.deleteExchange(this.exchange).catch(() => undefined);
    // The journal of the service that published to it goes with it (journalQueueOf).
    await channel.deleteQueue(journalQueueOf(this.exchange)).catch(() => undefined);
    await this.connection.close().catch(() => undefined);
    this.connection = null;
    this.checkContract();
  }
}
