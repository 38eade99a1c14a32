import { PaymentEventConsumer } from './consumer';

/**
 * Runs the consumer from its environment: AMQP_URL, AMQP_EXCHANGE (default payment.events), QUEUE, BINDINGS
 * (comma-separated routing keys or patterns), DATABASE_URL. Stops on SIGTERM or SIGINT, leaving nothing half done.
 */
function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    process.stderr.write(`${name} is required\n`);
    process.exit(78);
  }
  return value;
}

const consumer = new PaymentEventConsumer({
  amqpUrl: required('AMQP_URL'),
  exchange: process.env.AMQP_EXCHANGE || 'payment.events',
  queue: required('QUEUE'),
  bindings: required('BINDINGS')
    .split(',')
    .map((b) => b.trim()),
  databaseUrl: required('DATABASE_URL'),
  log: (message, fields) =>
    process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), message, ...fields })}\n`),
});

consumer.start().then(
  () => {
    const stop = (): void => void consumer.stop().then(() => process.exit(0));
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  },
  (error: Error) => {
    process.stderr.write(`cannot start: ${error.message}\n`);
    process.exit(1);
  },
);
