/**
 * The payment service's side of the interface, for tests, load and local trials: realistic signed
 * notifications for whole order and refund lifecycles, delivered on the sender's retry schedule
 * (optionally sped up) with duplicates, reordering and delays. No module-level state: every run
 * gets its own random source and clock.
 */
export {
  formatLocalReceiptDateTime,
  formatSenderTimestamp,
  NOTIFIED_PAY_METHOD_TYPE,
  orderNotificationBody,
  refundNotificationBody,
  writeOrderNotification,
  type Buyer,
  type OrderData,
  type OrderFields,
  type OrderNotificationParts,
  type OrderStatus,
  type PayMethodKind,
  type Product,
  type RefundData,
  type RefundStatus,
} from './bodies';
export {
  buildLifecycle,
  orderStatusesOf,
  PlanError,
  randomPlan,
  validatePlan,
  type Lifecycle,
  type LifecyclePlan,
  type PlanBase,
  type RefundPlan,
  type SimulatedNotification,
} from './lifecycle';
export { chance, freshSeed, pick, randomInt, seededRandom, type Random } from './random';
export {
  notificationHeaders,
  parseSimulatorAlgorithm,
  signNotification,
  SIMULATOR_ALGORITHMS,
  type HeaderOptions,
  type SignatureHeaders,
  type SimulatorAlgorithm,
} from './signing';
export {
  answerOf,
  concurrencyLimit,
  deliverWithRetries,
  httpSender,
  RETRY_SCHEDULE_MS,
  scaledClock,
  type AttemptReport,
  type Clock,
  type DeliveryOptions,
  type DeliveryRequest,
  type DeliveryResult,
  type Sender,
  type SendResult,
} from './delivery';
export {
  buildTraffic,
  NO_FAULTS,
  runSimulation,
  type Faults,
  type NotificationDelivery,
  type SimulationOptions,
  type SimulationReport,
  type SimulationSummary,
  type TrafficOptions,
} from './simulation';
export {
  PaymentServiceDouble,
  type DoubleClient,
  type DoubleEndpoint,
  type DoubleFault,
  type DoubleOrderInput,
  type DoubleRefundInput,
  type DoubleRequest,
  type DoubleTruth,
  type PaymentServiceDoubleOptions,
} from './paymentServiceDouble';
