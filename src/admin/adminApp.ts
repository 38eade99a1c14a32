import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { Counter } from 'prom-client';
import { isDatabaseUnavailable } from '../database/databaseErrors';
import { ping, type Db } from '../database/pool';
import { RequestError } from '../errors';
import { answerError, sendError } from '../http/jsonAnswers';
import { originsForHost } from '../http/origins';
import { beginRequest } from '../http/requestContext';
import { clientAddress, type TrustProxy } from '../intake/sourceAddress';
import type { Logger } from '../observability/logger';
import type { ProcessMetrics } from '../observability/metrics';
import { idProblem } from '../parsing/identifiers';
import type { OrderCheck } from '../reconciliation/checkOrder';
import type { PosProblem, Reconciliation } from '../reconciliation/reconciliation';
import { createConsole, type ConsoleOptions } from '../console/consoleApp';
import { LocalTime } from '../console/language/localTime';
import { beginAudit, completeAudit, recordAudit } from '../audit/auditQueries';
import { createSignInGuard, type SignInGuard } from '../console/signIn/signInGuard';
import { registerEventRoutes } from './eventRoutes';
import { registerOrderIndexRoutes } from './orderIndexRoutes';
import { registerOrderListRoutes } from './orderListRoutes';
import { auditActorOf, type AdminTokens, type Caller } from './tokens';
import { orderView, refundView, type OrderView } from './orderViews';

/**
 * How a group of the JSON API's routes lets callers in: `token` (a bearer token: ADMIN_TOKEN's, and for the event
 * routes a team's), `open` (none set and HOST loopback: this machine only), `closed` (none set and HOST beyond
 * loopback: 401 on every one). config/runtime.ts adminDoors.
 */
export type DataRoutesAccess = 'token' | 'open' | 'closed';

/** The admin port's data routes: their own small pool, a cap on work at once, and their token. */
export interface AdminData {
  db: Db;
  /** The tokens the admin port takes (admin/tokens.ts): ADMIN_TOKEN, the console's people's, the teams'. */
  tokens: AdminTokens;
  /** The data routes (ADMIN_TOKEN only) and the event routes (ADMIN_TOKEN and the teams): how each lets callers in. */
  access: { dataRoutes: DataRoutesAccess; events: DataRoutesAccess };
  /** Data requests worked on at once (ADMIN_CONCURRENCY); past it, 503. */
  concurrency: number;
  /** ADMIN_ORIGINS: the Hosts (besides loopback) the console and the JSON API answer (src/http/origins.ts). */
  adminOrigins: readonly string[];
  /** Whose X-Forwarded-For tells who a caller is (TRUST_PROXY): the throttle and the audit trail. */
  trustProxy: TrustProxy;
  /** admin_sign_ins_total: refused and throttled bearer tokens here, and the console's sign-ins. */
  signIns: Counter<'result' | 'via'>;
  /** The broker POST /events/replay publishes to (AMQP_URL); null: replays are refused. */
  amqpUrl?: string | null;
  /** PAYMENT_SERVICE_TIME_ZONE: the zone of the payment service's times without an offset (the finance CSV's). */
  paymentServiceTimeZone: string;
  /** The POS the service receives for (SECOND_KEYS): POST /orders/expected takes orders of these. */
  knownPos?: readonly string[];
  /** The console under /console (src/console/); null: none. Its pages share the cap above. */
  console?: Omit<ConsoleOptions, 'db' | 'limited' | 'logger' | 'reconciliation' | 'adminOrigins' | 'trustProxy'> | null;
  now?: () => Date;
}

export interface AdminOptions {
  /** Readiness asks this database (the recorder's pool): can notifications be recorded? */
  probeDb: Db;
  /** The data routes (/orders, /refunds); null where the process serves none (the relay alone). */
  data: AdminData | null;
  /** On-demand checks against the payment API (POST /orders/{orderId}/reconcile); null: off. */
  reconciliation?: Reconciliation | null;
  metrics: ProcessMetrics;
  logger: Logger;
  /** False once shutdown began: readiness fails first so the load balancer stops sending. */
  isAccepting: () => boolean;
  /** What the failover watch knows (src/failover/databaseWatch.ts), which readiness reports; absent: nothing. */
  databaseWrites?: () => { failingSince: Date | null; recovering: 'restoring' | 'reconciling' | null };
}

/** Where a request came from, by TRUST_PROXY's rule; 400 when an address on the way cannot be read. */
function callerAddress(req: Request, trust: TrustProxy): string {
  const forwarded = req.headers['x-forwarded-for'];
  const address = clientAddress(req.socket.remoteAddress, typeof forwarded === 'string' ? forwarded : undefined, trust);
  if (address === null) throw new RequestError(400, 'bad_request', 'the source address cannot be read');
  return address;
}

/** The Bearer token of an Authorization header, when it has the form; undefined otherwise. */
const bearerOf = (header: string): string | undefined =>
  header.length <= 1024 ? /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] : undefined;

/** Who called, as the door below found out (res.locals, set by `authorize`). */
const callerOf = (res: Response): Caller => res.locals.caller as Caller;

/** Which routes a door guards: the data routes (ADMIN_TOKEN's alone) or the event routes (the teams' too). */
type Door = 'dataRoutes' | 'events';

const DOOR_WORDS: Record<Door, { token: string; closed: string }> = {
  dataRoutes: {
    token: 'a valid admin bearer token (ADMIN_TOKEN) is required',
    closed: 'the data routes are closed: ADMIN_TOKEN is not set and HOST is not loopback; set ADMIN_TOKEN',
  },
  events: {
    token: "a valid bearer token (ADMIN_TOKEN's, or a team's of EVENT_TEAM_TOKENS) is required",
    closed:
      'the event routes are closed: neither ADMIN_TOKEN nor EVENT_TEAM_TOKENS is set and HOST is not loopback; set one',
  },
};

/**
 * A door of the JSON API. `token`: a valid `Authorization: Bearer`, checked only when the caller's source is not
 * throttled (signInGuard.ts, as the console's sign-in: ADMIN_TOKEN signs in there too, so guessing it here costs
 * the same); a wrong one counts against the source. A team's token opens the event routes only, a console
 * person's none (403: the token is right, the door is not its). `closed`: 401 always, saying why. `open`: anyone
 * who reaches this loopback port, as `local`. Who called is left in res.locals for the route and its audit row.
 */
function authorize(data: AdminData, guard: SignInGuard, door: Door) {
  const challenge = { 'WWW-Authenticate': 'Bearer realm="admin"' };
  const words = DOOR_WORDS[door];
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const access = data.access[door];
    if (access === 'open') {
      res.locals.caller = { kind: 'local' } satisfies Caller;
      return next();
    }
    if (access === 'closed') return sendError(res, 401, 'unauthorized', words.closed, challenge);
    const headers = req.headersDistinct.authorization ?? [];
    if (headers.length === 0) return sendError(res, 401, 'unauthorized', words.token, challenge);
    const checked = await guard.check(callerAddress(req, data.trustProxy), 'api', () => {
      if (headers.length > 1) return { problem: 'Authorization given more than once' };
      const token = bearerOf(headers[0] ?? '');
      return token === undefined ? { problem: 'no valid bearer token' } : { token };
    });
    if (checked.outcome === 'throttled')
      return sendError(res, 429, 'too_many_failures', `${checked.reason}; retry in ${checked.retryAfterSeconds} s`, {
        'Retry-After': String(checked.retryAfterSeconds),
      });
    if (checked.outcome === 'refused')
      return headers.length > 1
        ? sendError(res, 400, 'bad_request', 'Authorization is given more than once')
        : sendError(res, 401, 'unauthorized', words.token, challenge);
    const { holder } = checked;
    if (holder.kind === 'admin') res.locals.caller = { kind: 'admin' } satisfies Caller;
    else if (holder.kind === 'team' && door === 'events')
      res.locals.caller = { kind: 'team', team: holder.team } satisfies Caller;
    else
      return sendError(
        res,
        403,
        'token_not_allowed',
        holder.kind === 'team'
          ? `the token of the team ${holder.team.name} opens only GET /events and POST /events/replay`
          : "a console token signs in to the console (/console); the JSON API takes ADMIN_TOKEN, and the event routes a team's token",
      );
    next();
  };
}

/**
 * The Host a request names must be one the admin port answers (src/http/origins.ts), else 421 before any
 * routing or lookup: a page that rebinds its own name to this address is refused. A Host given twice is 400.
 */
function admitHost(adminOrigins: readonly string[]) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const hosts = req.headersDistinct.host ?? [];
    if (hosts.length > 1) return sendError(res, 400, 'bad_request', 'Host is given more than once');
    if (originsForHost(hosts[0], adminOrigins) === null)
      return sendError(
        res,
        421,
        'unexpected_host',
        'this admin port does not answer that Host: use 127.0.0.1 (a port-forward) or one of ADMIN_ORIGINS',
      );
    next();
  };
}

/**
 * A POST from a browser on another site is refused (403) before it does anything: `Sec-Fetch-Site` must be
 * same-origin (or none: typed, a bookmark), else `Origin`, when sent, one the admitted Host belongs to. A client
 * that is not a browser sends neither and goes on (its token, or this loopback port, is what lets it in).
 */
function sameOriginPost(adminOrigins: readonly string[]) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const site = req.headers['sec-fetch-site'];
    const origin = req.headers.origin;
    const allowed = originsForHost(req.headers.host, adminOrigins) ?? [];
    if (
      (typeof site === 'string' && site !== 'same-origin' && site !== 'none') ||
      (typeof origin === 'string' && !allowed.includes(origin.toLowerCase()))
    )
      return sendError(res, 403, 'cross_site_request', 'a request from another site is refused');
    next();
  };
}

/**
 * A cap on the data routes' work at once, so that reading projections or asking the payment API can never
 * starve the intake: past it, 503 at once. A place is held until the work ends, not until its client leaves
 * (leaving does not free a place); the work gets a signal that aborts when its client leaves, so it stops.
 */
function workLimit({ concurrency }: AdminData) {
  let working = 0;
  return async <T>(res: Response, work: (clientLeft: AbortSignal) => Promise<T>): Promise<T> => {
    if (working >= concurrency)
      throw new RequestError(503, 'admin_busy', 'too many admin requests at once; retry later', null, {
        'Retry-After': '1',
      });
    working += 1;
    const left = new AbortController();
    const onClose = (): void => {
      if (!res.writableEnded) left.abort();
    };
    // Its client may have left already, while the request waited or its body was read.
    if (res.destroyed) left.abort();
    else res.once('close', onClose);
    try {
      return await work(left.signal);
    } finally {
      working -= 1;
      res.off('close', onClose);
    }
  };
}

/** The id of a path, or 400 when it cannot be an order or refund id (idProblem). */
function validId(value: unknown, kind: 'order' | 'refund'): string {
  const id = typeof value === 'string' ? value : '';
  const problem = idProblem(id);
  if (problem !== null) throw new RequestError(400, `invalid_${kind}_id`, `not a valid ${kind} id: ${problem}`);
  return id;
}

/** What POST /orders/{orderId}/reconcile answers: the check, and the projection after it. */
type ReconcileAnswer = Omit<OrderCheck, 'final' | 'retryAfterMs' | 'failure'> & { order: OrderView | null };

const POS_PROBLEMS: Record<PosProblem, RequestError> = {
  pos_required: new RequestError(
    400,
    'pos_required',
    'nothing is recorded for this order and several POS are configured: give {"posId": "..."}',
  ),
  unknown_pos: new RequestError(400, 'unknown_pos', 'no payment API credentials are configured for that posId'),
  pos_mismatch: new RequestError(409, 'pos_mismatch', 'the order belongs to another POS than the posId given'),
};

/** The optional body's posId: `{"posId": "..."}`, or nothing. */
function requestedPosId(body: unknown): string | undefined {
  if (body === undefined || body === null || (typeof body === 'object' && Object.keys(body).length === 0))
    return undefined;
  const posId = typeof body === 'object' && 'posId' in body ? body.posId : undefined;
  if (typeof posId !== 'string' || posId === '' || posId.length > 64)
    throw new RequestError(400, 'bad_request', 'the body is optional; when given, it is {"posId": "<a POS id>"}');
  return posId;
}

/** The admin port: probes and metrics (open to the kubelet and Prometheus), and the projections. Never routed publicly. */
export function createAdminApp({
  probeDb,
  data,
  reconciliation = null,
  metrics,
  logger,
  isAccepting,
  databaseWrites,
}: AdminOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use((req, res, next) => {
    res.locals.requestId = beginRequest(req, res, metrics, 'admin', () => {
      const route = (req.route as { path?: string } | undefined)?.path;
      if (typeof route !== 'string') return 'unmatched';
      // The console's routes are its router's, under /console.
      return req.originalUrl.startsWith('/console/') || req.originalUrl === '/console' ? `/console${route}` : route;
    });
    next();
  });

  app.get('/metrics', async (_req, res) => {
    res.set('Content-Type', metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  // Liveness: the event loop answers. Never depends on the database, or a database outage would restart
  // every pod at once.
  app.get('/livez', (_req, res) => {
    res.json({ status: 'ok' });
  });

  // Readiness: accepting, and the database answers. The broker is not checked on purpose: with it down,
  // notifications are still accepted and events wait in the outbox. Nor are writes that fail while the database
  // answers (a synchronous standby away, a failover restored): every replica shares that database, so unready
  // replicas would only take the console and the metrics away too, while the intake answers 503 with Retry-After
  // on its own. The answer says so instead (docs/DEPLOYMENT.md, "Failover").
  app.get('/readyz', async (_req, res) => {
    if (!isAccepting()) return sendError(res, 503, 'shutting_down', 'the service is shutting down');
    try {
      await ping(probeDb);
      const writes = databaseWrites?.();
      res.json({
        status: 'ready',
        ...(writes?.failingSince ? { writesFailingSince: writes.failingSince.toISOString() } : {}),
        ...(writes?.recovering ? { failoverRecovery: writes.recovering } : {}),
      });
    } catch {
      sendError(res, 503, 'database_unavailable', 'the database does not answer');
    }
  });

  if (data) {
    const now = data.now ?? (() => new Date());
    const guard = createSignInGuard({ db: data.db, now, signIns: data.signIns, tokens: data.tokens });
    const authorized = authorize(data, guard, 'dataRoutes');
    const limited = workLimit(data);
    // Every route below answers only the Hosts it expects; the probes and /metrics above answer any (the kubelet
    // sends the pod's address).
    app.use(admitHost(data.adminOrigins));
    app.get('/', (_req, res) => res.redirect(303, '/console'));
    if (data.console)
      app.use(
        '/console',
        createConsole(
          {
            ...data.console,
            db: data.db,
            limited,
            logger,
            reconciliation,
            adminOrigins: data.adminOrigins,
            trustProxy: data.trustProxy,
            now,
          },
          guard,
        ),
      );
    registerOrderIndexRoutes(app, {
      db: data.db,
      authorized,
      limited,
      clock: new LocalTime(data.console?.timeZone ?? 'UTC', data.console?.locale ?? 'en-GB'),
      paymentServiceTimeZone: data.paymentServiceTimeZone,
    });
    app.get('/orders/:orderId', authorized, async (req, res) => {
      const orderId = validId(req.params.orderId, 'order');
      const order = await limited(res, () => orderView(data.db, orderId));
      if (!order) throw new RequestError(404, 'order_not_found', 'no notification has been recorded for this order');
      res.json(order);
    });

    /** The JSON API's actions are in the audit trail too: by the token's holder (`admin`), or `local` when open. */
    const auditApi = (req: Request, res: Response, orderId: string, result: string, detail = ''): Promise<void> =>
      recordAudit(data.db, {
        ...auditActorOf(callerOf(res)),
        action: 'reconcile',
        target: orderId,
        orderId,
        result,
        detail,
        via: 'api',
        sourceAddress: callerAddress(req, data.trustProxy),
      });

    app.post(
      '/orders/:orderId/reconcile',
      sameOriginPost(data.adminOrigins),
      authorized,
      express.json({ limit: 1024, strict: true }),
      async (req, res) => {
        const orderId = validId(req.params.orderId, 'order');
        if (!reconciliation) {
          await auditApi(req, res, orderId, 'refused', 'reconciliation is off');
          throw new RequestError(409, 'reconciliation_off', 'reconciliation is off: PAYMENT_API_URL is not set');
        }
        const posId = requestedPosId(req.body);
        const answer = await limited(res, async (clientLeft) => {
          const checked = await reconciliation.reconcileOrder(orderId, {
            ...(posId === undefined ? {} : { posId }),
            clientLeft,
          });
          await auditApi(
            req,
            res,
            orderId,
            'problem' in checked ? checked.problem : checked.result,
            'problem' in checked
              ? ''
              : `applied ${checked.applied.length}, stale ${checked.stale.length}, conflicts ${checked.conflicts.length}`,
          );
          if ('problem' in checked) throw POS_PROBLEMS[checked.problem];
          if (checked.result === 'unavailable')
            throw new RequestError(
              503,
              'payment_api_unavailable',
              'the payment API does not answer; retry later',
              null,
              {
                'Retry-After': String(Math.max(1, Math.ceil((checked.retryAfterMs ?? 5000) / 1000))),
              },
            );
          const order = await orderView(data.db, orderId);
          if (!order && checked.result === 'not_found')
            throw new RequestError(404, 'order_not_found', 'neither this service nor the payment API knows this order');
          const { result, posId: askedWith, said, applied, stale, conflicts } = checked;
          return {
            orderId,
            posId: askedWith,
            result,
            said,
            applied,
            stale,
            conflicts,
            order,
          } satisfies ReconcileAnswer;
        });
        res.json(answer);
      },
    );

    registerOrderListRoutes(app, {
      db: data.db,
      reconciliation,
      knownPos: data.knownPos ?? [],
      authorized,
      sameOrigin: sameOriginPost(data.adminOrigins),
      limited,
      caller: (req, res) => ({
        actor: auditActorOf(callerOf(res)).actor,
        sourceAddress: callerAddress(req, data.trustProxy),
      }),
      now,
    });

    // A replay publishes events again: a browser on another site may not ask for one, and each is on the record.
    app.post('/events/replay', sameOriginPost(data.adminOrigins));
    registerEventRoutes(app, {
      db: data.db,
      amqpUrl: data.amqpUrl ?? null,
      authorized: authorize(data, guard, 'events'),
      callerOf,
      limited,
      replayAudit: {
        begin: (req, caller, { queue, orderId, detail }) =>
          beginAudit(data.db, {
            ...auditActorOf(caller),
            action: 'events_replay',
            target: `queue ${queue}`,
            orderId,
            result: 'publishing',
            detail,
            via: 'api',
            sourceAddress: callerAddress(req, data.trustProxy),
          }),
        complete: (id, result) => completeAudit(data.db, [id], { result }),
      },
    });

    app.get('/refunds/:refundId', authorized, async (req, res) => {
      const refundId = validId(req.params.refundId, 'refund');
      const refund = await limited(res, () => refundView(data.db, refundId));
      if (!refund) throw new RequestError(404, 'refund_not_found', 'no notification has been recorded for this refund');
      res.json(refund);
    });
  }

  app.use((_req: Request, res: Response) => sendError(res, 404, 'not_found', 'no such route'));
  // Express's own errors (a malformed path, say) carry a 4xx status: the client's, not ours. A database
  // that does not answer is a 503 to retry, not a defect.
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const status = (error as { status?: unknown }).status;
    const clientError = !(error instanceof RequestError) && typeof status === 'number' && status >= 400 && status < 500;
    const expected = clientError
      ? new RequestError(status, 'bad_request', 'the request could not be read')
      : isDatabaseUnavailable(error)
        ? new RequestError(503, 'database_unavailable', 'the database does not answer; retry later', null, {
            'Retry-After': '5',
          })
        : error;
    answerError(expected, res, logger, { requestId: res.locals.requestId as string, method: req.method });
  });
  return app;
}
