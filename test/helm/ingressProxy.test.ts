/**
 * The chart's proxy trust behind a real proxy: Debian's nginx, configured the way ingress-nginx configures
 * itself for the Ingress the chart renders (X-Forwarded-For and X-Real-IP set to the peer it saw, with
 * use-forwarded-headers off, its default; `allow`/`deny all` from whitelist-source-range), in front of the
 * service started with the ConfigMap the chart renders. Senders go through it and around it, each from an
 * address of its own on the loopback network.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { query } from '../support/database';
import { freePort } from '../support/net';
import { startTestService, type TestService } from '../support/service';
import { orderBody, SECOND_KEY, sign, uniqueId } from '../support/signing';
import { only, render, type K8sObject } from './helm';
import { sleep } from '../support/wait';
import { toolPath } from '../support/tools';

const SENDER = '127.0.0.3';
const STRANGER = '127.0.0.4';
/** The address nginx connects to the service from: the ingress controller pod's, in the chart's terms. */
const CONTROLLER = '127.0.0.1';

const configOf = (objects: K8sObject[]): Record<string, string> =>
  (only(objects, 'ConfigMap', '-notification-receiver') as K8sObject & { data: Record<string, string> }).data;

function chart(enforceAllowlist: boolean): K8sObject[] {
  return render({
    set: [
      'ingress.enabled=true',
      'ingress.host=notifications.example.com',
      `ingress.controllerCidrs={${CONTROLLER}/32}`,
      `ingress.enforceAllowlist=${enforceAllowlist}`,
      `config.allowedSourceIps=${SENDER}`,
    ],
  });
}

interface Proxy {
  port: number;
  stop(): Promise<void>;
}

/** nginx as ingress-nginx writes the location of the chart's Ingress (rootfs/etc/nginx/template/nginx.tmpl). */
async function startNginx(objects: K8sObject[], upstreamPort: number): Promise<Proxy> {
  const annotations = only(objects, 'Ingress').metadata.annotations ?? {};
  const allowed = annotations['nginx.ingress.kubernetes.io/whitelist-source-range'];
  const dir = mkdtempSync(path.join(tmpdir(), 'nginx-ingress-'));
  const port = await freePort();
  writeFileSync(
    path.join(dir, 'nginx.conf'),
    `
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${port};
    location = /notifications {
      ${
        allowed
          ? `${allowed
              .split(',')
              .map((cidr) => `allow ${cidr};`)
              .join(' ')} deny all;`
          : ''
      }
      client_max_body_size ${annotations['nginx.ingress.kubernetes.io/proxy-body-size'] ?? '1m'};
      proxy_set_header X-Request-ID $request_id;
      proxy_set_header X-Real-IP $remote_addr;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Forwarded-Host $host;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_pass http://127.0.0.1:${upstreamPort};
    }
  }
}
`,
  );
  const nginx: ChildProcess = spawn(
    toolPath('nginx'),
    ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-g', 'daemon off;'],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  nginx.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const deadline = Date.now() + 10_000;
  for (;;) {
    const up = await new Promise<boolean>((resolve) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/' }, (res) => {
        res.resume();
        resolve(true);
      });
      req.on('error', () => resolve(false));
    });
    if (up) break;
    if (Date.now() > deadline || nginx.exitCode !== null) throw new Error(`nginx did not start: ${stderr}`);
    await sleep(50);
  }
  return {
    port,
    async stop() {
      const exited = new Promise((resolve) => nginx.once('exit', resolve));
      nginx.kill('SIGQUIT');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** POSTs a signed notification from a given local address, with optional headers. */
function send(
  port: number,
  from: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; orderId: string }> {
  const orderId = uniqueId('PROXY');
  const body = orderBody({ orderId, status: 'PENDING' });
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        localAddress: from,
        method: 'POST',
        path: '/notifications',
        headers: {
          'Content-Type': 'application/json;charset=UTF-8',
          'OpenSvc-Signature': sign(body, SECOND_KEY),
          'Content-Length': String(Buffer.byteLength(body)),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, orderId }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function sourceStored(svc: TestService, orderId: string): Promise<string | undefined> {
  const [row] = await query<{ source: string }>(
    svc.database.url,
    `SELECT host(d.source_address) AS source FROM deliveries d JOIN notifications n ON n.id = d.notification_id
      WHERE n.order_id = $1`,
    [orderId],
  );
  return row?.source;
}

describe.each([
  ['the app alone checks the allowlist', false],
  ['the ingress enforces the allowlist too', true],
])('behind nginx configured as the ingress controller (%s)', (_title, enforce) => {
  let svc: TestService;
  let proxy: Proxy;
  beforeAll(async () => {
    const objects = chart(enforce);
    const config = configOf(objects);
    expect(config.TRUST_PROXY).toBe(`${CONTROLLER}/32`);
    svc = await startTestService({
      env: {
        RELAY_ENABLED: 'false',
        TRUST_PROXY: config.TRUST_PROXY as string,
        ALLOWED_SOURCE_IPS: config.ALLOWED_SOURCE_IPS as string,
      },
    });
    proxy = await startNginx(objects, Number(new URL(svc.publicUrl).port));
  }, 30_000);
  afterAll(async () => {
    await proxy?.stop();
    await svc?.stop();
  });

  it('When an allowed sender goes through the proxy, then it is accepted and its own address is recorded', async () => {
    const res = await send(proxy.port, SENDER);
    expect(res.status).toBe(200);
    expect(await sourceStored(svc, res.orderId)).toBe(SENDER);
  });

  it('When a stranger goes through the proxy claiming the allowed address in X-Forwarded-For, then it is refused', async () => {
    const res = await send(proxy.port, STRANGER, { 'X-Forwarded-For': SENDER, 'X-Real-IP': SENDER });
    expect(res.status).toBe(403);
    // Refused by nginx itself when the ingress enforces the allowlist, else by the app.
    if (!enforce) expect(JSON.parse(res.body)).toMatchObject({ error: { code: 'source_not_allowed' } });
    else expect(res.body).toMatch(/nginx/);
    expect(await sourceStored(svc, res.orderId)).toBeUndefined();
  });

  it('When a stranger goes around the proxy claiming the allowed address, then it is refused: only the proxy is believed', async () => {
    const res = await send(Number(new URL(svc.publicUrl).port), STRANGER, { 'X-Forwarded-For': SENDER });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body)).toMatchObject({ error: { code: 'source_not_allowed' } });
  });

  it('When the allowed sender goes around the proxy, then its own address is what counts', async () => {
    const res = await send(Number(new URL(svc.publicUrl).port), SENDER, { 'X-Forwarded-For': STRANGER });
    expect(res.status).toBe(200);
    expect(await sourceStored(svc, res.orderId)).toBe(SENDER);
  });
});

it('When TRUST_PROXY is a hop count (what the chart refuses), then a stranger around the proxy chooses its address', async () => {
  const svc = await startTestService({ env: { RELAY_ENABLED: 'false', TRUST_PROXY: '1', ALLOWED_SOURCE_IPS: SENDER } });
  try {
    const res = await send(Number(new URL(svc.publicUrl).port), STRANGER, { 'X-Forwarded-For': SENDER });
    expect(res.status).toBe(200);
  } finally {
    await svc.stop();
  }
});
