import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { endpointOf, errorBody, isJson, sendHuge, status, type Json } from './doubleAnswers';
import type {
  DoubleEndpoint,
  DoubleFault,
  DoubleOrderInput,
  DoubleRefundInput,
  DoubleRequest,
  PaymentServiceDoubleOptions,
} from './doubleInterface';

export type * from './doubleInterface';

/**
 * The payment service's API for tests and local trials (spec, "Endpoints" 1, 3 and 7, and "Errors"):
 * it holds the truth about orders and refunds, learned from the simulator's notifications as each
 * status happens (or set by a test), and answers with the spec's shapes and errors, with faults,
 * slowness and a lagging view on demand. Nothing here is module state: every test starts its own.
 */

export interface OrderVersion {
  atMs: number;
  order: Json;
  paymentId: string | null;
}

export interface RefundVersion {
  atMs: number;
  record: Json;
}

/**
 * The double's truth: every version of every order and refund, as a file keeps it across the double's restarts
 * (src/simulator/doubleStateFile.ts). Tokens and faults are not part of it: a client asks for a new token.
 */
export interface DoubleTruth {
  orders: Array<[orderId: string, versions: OrderVersion[]]>;
  refunds: Array<[orderId: string, refunds: Array<[refundId: string, versions: RefundVersion[]]>]>;
}

interface IssuedToken {
  posId: string;
  expiresAtMs: number;
}

const MAX_RECORDED_REQUESTS = 10_000;

export class PaymentServiceDouble {
  /** Every request in arrival order (the latest 10,000). */
  readonly requests: DoubleRequest[] = [];
  /** Most requests ever in progress at once (the client's in-flight cap shows here). */
  peakInFlight = 0;

  private readonly orders = new Map<string, OrderVersion[]>();
  private readonly refunds = new Map<string, Map<string, RefundVersion[]>>();
  private readonly tokens = new Map<string, IssuedToken>();
  private faults: Array<DoubleFault & { left: number }> = [];
  private lagMs = 0;
  private inFlight = 0;
  private tokenLifetimeSeconds: number;
  private readonly now: () => number;
  private readonly server: http.Server;

  constructor(private readonly options: PaymentServiceDoubleOptions) {
    this.tokenLifetimeSeconds = options.tokenLifetimeSeconds ?? 43_199;
    this.now = options.now ?? Date.now;
    // An aborted request (the client's timeout) ends its answer; nothing else can fail here.
    this.server = http.createServer((req, res) => void this.answer(req, res).catch(() => res.destroy()));
  }

  /** Listens (port 0: any free port) and returns the base URL, e.g. http://127.0.0.1:40123. */
  async start({ port = 0, host = '127.0.0.1' }: { port?: number; host?: string } = {}): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => resolve());
    });
    return this.url;
  }

  get url(): string {
    const address = this.server.address() as AddressInfo | null;
    if (!address) throw new Error('the payment-service double is not listening');
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return `http://${host}:${address.port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // --- The truth ---------------------------------------------------------------------------------

  /** Everything the double knows of orders and refunds, to keep (a copy: later changes do not show in it). */
  truth(): DoubleTruth {
    return structuredClone({
      orders: [...this.orders],
      refunds: [...this.refunds].map(([orderId, ofOrder]) => [orderId, [...ofOrder]]),
    });
  }

  /** Knows, from now on, what `truth()` gave (before anything else is learnt). */
  restoreTruth(truth: DoubleTruth): void {
    for (const [orderId, versions] of truth.orders) this.orders.set(orderId, structuredClone(versions));
    for (const [orderId, refunds] of truth.refunds)
      this.refunds.set(orderId, new Map(refunds.map(([refundId, versions]) => [refundId, structuredClone(versions)])));
  }

  /**
   * Learns the status a notification body announces, at the moment it happens (the simulator calls
   * this as each status changes, whether or not the notification is ever delivered).
   */
  learn(notificationBody: Buffer): void {
    const body: unknown = JSON.parse(notificationBody.toString('utf8'));
    if (!isJson(body)) return;
    if (isJson(body.order)) {
      const properties = Array.isArray(body.properties) ? body.properties : [];
      const paymentId = properties.find((p: unknown) => isJson(p) && p.name === 'PAYMENT_ID') as Json | undefined;
      const previous = this.latest(this.orders.get(String(body.order.orderId)) ?? []);
      // Retrieval shows the whole order; a CANCELED or PENDING notification leaves the buyer out.
      const order = { ...(previous?.order ?? {}), ...body.order };
      this.addOrderVersion(String(order.orderId), {
        order,
        paymentId: typeof paymentId?.value === 'string' ? paymentId.value : (previous?.paymentId ?? null),
      });
      return;
    }
    if (isJson(body.refund) && typeof body.orderId === 'string') {
      const refund = body.refund;
      // A refund record (spec, "Refund record") from the notification's fields.
      const record: Json = {
        refundId: refund.refundId,
        ...(refund.extRefundId !== undefined ? { extRefundId: refund.extRefundId } : {}),
        amount: refund.amount,
        currencyCode: refund.currencyCode,
        description: refund.reasonDescription,
        creationDateTime: refund.refundDate,
        status: refund.status,
        statusDateTime: refund.statusDateTime,
        ...(refund.status === 'CANCELED'
          ? { statusError: { code: 'PROVIDER_BANK_REJECT', description: 'Bank rejected the refund' } }
          : {}),
        type: 'REFUND_PAYMENT_STANDARD',
      };
      this.addRefundVersion(body.orderId, record);
    }
  }

  /** Sets (or moves) an order's status, as of now. */
  setOrder(input: DoubleOrderInput): void {
    const previous = this.latest(this.orders.get(input.orderId) ?? []);
    const order: Json = {
      orderId: input.orderId,
      extOrderId: input.extOrderId ?? previous?.order.extOrderId ?? `ext-${input.orderId}`,
      orderCreateDate: previous?.order.orderCreateDate ?? new Date(this.now()).toISOString(),
      notifyUrl: 'http://127.0.0.1/notifications',
      customerIp: '127.0.0.1',
      merchantPosId: input.merchantPosId,
      description: 'Shopping at myStore.com',
      currencyCode: input.currencyCode ?? previous?.order.currencyCode ?? 'PLN',
      totalAmount: input.totalAmount ?? previous?.order.totalAmount ?? '15000',
      status: input.status,
      products: [{ name: 'Wireless mouse', unitPrice: input.totalAmount ?? '15000', quantity: '1' }],
      ...(input.payMethodType !== undefined
        ? { payMethod: { type: input.payMethodType } }
        : isJson(previous?.order.payMethod)
          ? { payMethod: previous.order.payMethod }
          : {}),
    };
    const paymentId =
      input.paymentId !== undefined
        ? input.paymentId
        : (previous?.paymentId ?? (input.status === 'NEW' || input.status === 'PENDING' ? null : '5000000001'));
    this.addOrderVersion(input.orderId, { order, paymentId });
  }

  /** Sets (or moves) a refund's status, as of now. */
  setRefund(orderId: string, input: DoubleRefundInput): void {
    const at = new Date(this.now()).toISOString();
    const previous = this.latest(this.refunds.get(orderId)?.get(input.refundId) ?? []);
    this.addRefundVersion(orderId, {
      refundId: input.refundId,
      ...(input.extRefundId !== undefined ? { extRefundId: input.extRefundId } : {}),
      amount: input.amount ?? previous?.record.amount ?? '1000',
      currencyCode: input.currencyCode ?? previous?.record.currencyCode ?? 'PLN',
      description: 'customer request',
      creationDateTime: previous?.record.creationDateTime ?? at,
      status: input.status,
      statusDateTime: at,
      ...(input.status === 'CANCELED'
        ? { statusError: { code: 'PROVIDER_BANK_REJECT', description: 'Bank rejected the refund' } }
        : {}),
      type: 'REFUND_PAYMENT_STANDARD',
    });
  }

  /** The status the API knows now (lag aside): what every projection should end at. */
  orderStatus(orderId: string): string | null {
    const latest = this.latest(this.orders.get(orderId) ?? []);
    return latest ? String(latest.order.status) : null;
  }

  // --- Behaviour ---------------------------------------------------------------------------------

  /** Queues faults, used in order by the requests they match. */
  injectFaults(...faults: DoubleFault[]): void {
    this.faults.push(...faults.map((f) => ({ ...f, left: f.times ?? 1 })));
  }

  clearFaults(): void {
    this.faults = [];
  }

  /**
   * The answer lags the truth: a status (or refund status) shows only once it is this old; before,
   * the previous one does (PENDING right after COMPLETED), as the real API sometimes does. 0: no lag.
   */
  setLag(ms: number): void {
    this.lagMs = ms;
  }

  /** expires_in of the tokens issued from now on. */
  setTokenLifetime(seconds: number): void {
    this.tokenLifetimeSeconds = seconds;
  }

  /** Every issued token expires now (a token expiring mid-run); the client learns it from a 401. */
  expireTokens(): void {
    this.tokens.clear();
  }

  /** Requests to one endpoint so far. */
  count(endpoint: DoubleEndpoint): number {
    return this.requests.filter((r) => r.endpoint === endpoint).length;
  }

  // --- HTTP --------------------------------------------------------------------------------------

  private latest<T extends { atMs: number }>(versions: readonly T[]): T | undefined {
    return versions[versions.length - 1];
  }

  /** The version the API shows now: the newest at least `lagMs` old, else the oldest. */
  private visible<T extends { atMs: number }>(versions: readonly T[]): T | undefined {
    const cutoff = this.now() - this.lagMs;
    for (let i = versions.length - 1; i >= 0; i--) if ((versions[i] as T).atMs <= cutoff) return versions[i];
    return undefined;
  }

  private addOrderVersion(orderId: string, version: Omit<OrderVersion, 'atMs'>): void {
    const versions = this.orders.get(orderId) ?? [];
    versions.push({ atMs: this.now(), ...version });
    this.orders.set(orderId, versions);
    this.options.onChange?.();
  }

  private addRefundVersion(orderId: string, record: Json): void {
    const ofOrder = this.refunds.get(orderId) ?? new Map<string, RefundVersion[]>();
    const refundId = String(record.refundId);
    const versions = ofOrder.get(refundId) ?? [];
    versions.push({ atMs: this.now(), record });
    ofOrder.set(refundId, versions);
    this.refunds.set(orderId, ofOrder);
    this.options.onChange?.();
  }

  private nextFault(endpoint: DoubleEndpoint | 'unknown'): DoubleFault | null {
    const index = this.faults.findIndex((f) => f.endpoint === undefined || f.endpoint === endpoint);
    if (index === -1) return null;
    const fault = this.faults[index] as DoubleFault & { left: number };
    fault.left -= 1;
    if (fault.left <= 0) this.faults.splice(index, 1);
    return fault;
  }

  private async answer(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.inFlight += 1;
    this.peakInFlight = Math.max(this.peakInFlight, this.inFlight);
    res.once('close', () => (this.inFlight -= 1));
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const path = new URL(req.url ?? '/', 'http://double').pathname;
    const method = req.method ?? 'GET';
    const endpoint = endpointOf(method, path);
    const record: DoubleRequest = {
      endpoint: endpoint?.name ?? 'unknown',
      method,
      path,
      contentType: req.headers['content-type'] ?? null,
      tokenPosId: this.tokenPosId(req.headers.authorization),
      status: null,
    };
    this.requests.push(record);
    // A local run may last hours: keep the recent requests only.
    if (this.requests.length > MAX_RECORDED_REQUESTS)
      this.requests.splice(0, this.requests.length - MAX_RECORDED_REQUESTS);

    const send = (status: number, json: Json, headers: Record<string, string> = {}): void => {
      record.status = status;
      res.writeHead(status, {
        'content-type': 'application/json;charset=UTF-8',
        'correlation-id': randomUUID(),
        ...headers,
      });
      res.end(JSON.stringify(json));
    };

    const fault = this.nextFault(record.endpoint);
    if (fault?.delayMs) await new Promise((resolve) => setTimeout(resolve, fault.delayMs));
    if (fault?.reset) {
      req.socket.destroy();
      return;
    }
    if (fault?.hugeBody !== undefined) {
      record.status = 200;
      await sendHuge(res, fault.hugeBody, fault.declared === true);
      return;
    }
    if (fault?.status !== undefined) {
      send(
        fault.status,
        errorBody(fault.status),
        fault.retryAfter !== undefined ? { 'retry-after': fault.retryAfter } : {},
      );
      return;
    }

    if (!endpoint) return send(404, status('DATA_NOT_FOUND', 'Requested data does not exist'));
    if (endpoint.name === 'token') return this.answerToken(req, body, send);

    // GET must carry no body (spec, "Endpoints").
    if (body.length > 0) return send(403, status('UNAUTHORIZED_REQUEST', 'GET with a body'));
    if (record.tokenPosId === null) return send(401, status('UNAUTHORIZED', 'Invalid or expired token'));
    const versions = this.orders.get(endpoint.orderId);
    const order = versions ? (this.visible(versions) ?? versions[0]) : undefined;
    if (!order) return send(404, status('DATA_NOT_FOUND', 'Requested data does not exist'));
    if (order.order.merchantPosId !== record.tokenPosId) {
      return send(403, {
        status: {
          statusCode: 'ERROR_VALUE_INVALID',
          severity: 'ERROR',
          codeLiteral: 'INVALID_AUTH_FOR_THIS_ORDER',
          statusDesc: 'OAuth POS differs from merchantPosId',
        },
      });
    }
    if (endpoint.name === 'order') {
      return send(200, {
        orders: [order.order],
        status: { statusCode: 'SUCCESS', statusDesc: 'Request processed successfully' },
        properties: order.paymentId === null ? [] : [{ name: 'PAYMENT_ID', value: order.paymentId }],
      });
    }
    const refunds = [...(this.refunds.get(endpoint.orderId)?.values() ?? [])].map((history) => {
      // A refund too fresh to show its outcome is still queued for processing.
      const shown = this.visible(history);
      return shown
        ? shown.record
        : { ...(history[0] as RefundVersion).record, status: 'PENDING', statusError: undefined };
    });
    return send(200, { refunds });
  }

  private answerToken(req: http.IncomingMessage, body: Buffer, send: (status: number, json: Json) => void): void {
    // Without the form content type the call is answered 401 (spec, "Endpoints" 1).
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (contentType !== 'application/x-www-form-urlencoded')
      return send(401, status('UNAUTHORIZED', 'Content-Type must be application/x-www-form-urlencoded'));
    const form = new URLSearchParams(body.toString('utf8'));
    const client = this.options.clients.find(
      (c) => c.clientId === form.get('client_id') && c.clientSecret === form.get('client_secret'),
    );
    if (form.get('grant_type') !== 'client_credentials' || !client)
      return send(401, status('UNAUTHORIZED', 'Incorrect authentication'));
    const accessToken = randomBytes(18).toString('hex');
    this.tokens.set(accessToken, {
      posId: client.posId,
      expiresAtMs: this.now() + this.tokenLifetimeSeconds * 1000,
    });
    send(200, {
      access_token: accessToken,
      token_type: 'bearer',
      expires_in: this.tokenLifetimeSeconds,
      grant_type: 'client_credentials',
    });
  }

  private tokenPosId(authorization: string | undefined): string | null {
    const match = /^Bearer (\S+)$/i.exec(authorization ?? '');
    const token = match ? this.tokens.get(match[1] as string) : undefined;
    if (!token) return null;
    if (this.now() >= token.expiresAtMs) return null;
    return token.posId;
  }
}
