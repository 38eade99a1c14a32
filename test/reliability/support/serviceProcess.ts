import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { AMQP_URL, journalQueueOf } from '../../support/broker';
import { OTHER_KEY, OTHER_POS_ID, POS_ID, SECOND_KEY } from '../../support/signing';
import { ensureBuilt } from './build';
import { freePort, getJson, send } from './http';
import { sleep } from '../../support/wait';
import { secrets } from './secrets';

export interface ServiceProcessOptions {
  /** Names the process in reports and findings. */
  label: string;
  databaseUrl: string;
  exchange: string;
  /** Overrides and additions to the environment (PORT, ADMIN_PORT and HOST are chosen here). */
  env?: Record<string, string>;
  readyTimeoutMs?: number;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  at: number;
}

/** `node dist/main.js` of the current build, on free ports, with every log line captured. */
/** Every service's log is also kept here for a look after a failed run. */
export const LOG_DIR = path.join(os.tmpdir(), 'nr-reliability-results', 'service-logs');

/** Children still running; killed when the test process exits, however the run ended. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export class ServiceProcess {
  readonly logs: string[] = [];
  readonly logFile: string;
  exitInfo: ExitInfo | null = null;
  readonly exited: Promise<ExitInfo>;
  /** Highest RSS seen (sampled every 250 ms while the process runs), in kB. */
  private peakRssKb = 0;
  private readonly rssTimer: NodeJS.Timeout;

  private constructor(
    readonly label: string,
    private readonly child: ChildProcess,
    readonly publicPort: number,
    readonly adminPort: number,
    readonly env: Record<string, string>,
  ) {
    secrets.register(this);
    running.add(child);
    mkdirSync(LOG_DIR, { recursive: true });
    this.logFile = path.join(LOG_DIR, `${label}-${child.pid ?? 'x'}.log`);
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) {
        readline.createInterface({ input: stream }).on('line', (line) => {
          this.logs.push(line);
          appendFileSync(this.logFile, `${line}\n`);
        });
      }
    }
    this.rssTimer = setInterval(() => {
      this.peakRssKb = Math.max(this.peakRssKb, this.rssKb() ?? 0);
    }, 250);
    this.rssTimer.unref();
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        running.delete(child);
        clearInterval(this.rssTimer);
        this.exitInfo = { code, signal, at: Date.now() };
        resolve(this.exitInfo);
      });
    });
  }

  /** Peak resident memory over the process's life so far, in MB. */
  get peakRssMb(): number {
    this.peakRssKb = Math.max(this.peakRssKb, this.rssKb() ?? 0);
    return Math.round(this.peakRssKb / 1024);
  }

  get pid(): number {
    return this.child.pid as number;
  }

  get running(): boolean {
    return this.exitInfo === null;
  }

  static async start(options: ServiceProcessOptions): Promise<ServiceProcess> {
    const mainJs = await ensureBuilt();
    let lastError: Error | null = null;
    // A free port found now may be taken before the child binds it: try again on other ports.
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const [publicPort, adminPort] = [await freePort(), await freePort()];
      const env: Record<string, string> = {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        PORT: String(publicPort),
        ADMIN_PORT: String(adminPort),
        HOST: '127.0.0.1',
        SECOND_KEYS: `${POS_ID}:${SECOND_KEY},${OTHER_POS_ID}:${OTHER_KEY}`,
        ALLOWED_SOURCE_IPS: '127.0.0.1',
        DATABASE_URL: options.databaseUrl,
        AMQP_URL,
        AMQP_EXCHANGE: options.exchange,
        JOURNAL_QUEUE: journalQueueOf(options.exchange),
        LOG_LEVEL: 'info',
        ...options.env,
      };
      const child = spawn(process.execPath, [mainJs], {
        cwd: path.dirname(path.dirname(mainJs)),
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const service = new ServiceProcess(
        attempt === 0 ? options.label : `${options.label}#${attempt + 1}`,
        child,
        publicPort,
        adminPort,
        env,
      );
      try {
        await service.waitReady(options.readyTimeoutMs ?? 30_000);
        return service;
      } catch (error) {
        lastError = error as Error;
        service.kill('SIGKILL');
        await service.exited;
        if (!service.logs.some((l) => l.includes('EADDRINUSE'))) break;
      }
    }
    throw lastError ?? new Error('service did not start');
  }

  /** Until GET /readyz answers 200 (throws with the last log lines if the process exits or it takes too long). */
  async waitReady(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (!this.running)
        throw new Error(
          `${this.label} exited (${JSON.stringify(this.exitInfo)}) before ready:\n${this.logs.slice(-20).join('\n')}`,
        );
      const ready = await getJson(this.adminPort, '/readyz').catch(() => ({ status: 0 }));
      if (ready.status === 200) return;
      if (Date.now() > deadline)
        throw new Error(`${this.label} not ready within ${timeoutMs} ms:\n${this.logs.slice(-20).join('\n')}`);
      await sleep(100);
    }
  }

  /** Log lines at level error or fatal, and anything not JSON (a crash trace): for failure messages. */
  problemLines(limit = 5): string[] {
    return this.logs
      .filter((l) => !l.startsWith('{') || /"level":(50|60)/.test(l))
      .slice(-limit)
      .map((l) => l.slice(0, 500));
  }

  /** Throws, with the crash's log lines, when the process is no longer running. */
  assertAlive(): void {
    if (!this.running) {
      throw new Error(
        `${this.label} exited (${JSON.stringify(this.exitInfo)}); last problems logged:\n${this.problemLines().join('\n')}`,
      );
    }
  }

  kill(signal: NodeJS.Signals): void {
    if (this.running) this.child.kill(signal);
  }

  /** Waits for the exit; null when it did not happen within timeoutMs. */
  async waitExit(timeoutMs: number): Promise<ExitInfo | null> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), timeoutMs);
    });
    const result = await Promise.race([this.exited, timeout]);
    clearTimeout(timer);
    return result;
  }

  /** Graceful stop (SIGTERM), then SIGKILL if it hangs. Safe to call on an exited process. */
  async stop(timeoutMs = 30_000): Promise<ExitInfo> {
    if (!this.running) return this.exitInfo as ExitInfo;
    this.kill('SIGTERM');
    const info = await this.waitExit(timeoutMs);
    if (info) return info;
    this.kill('SIGKILL');
    return this.exited;
  }

  /** Resident set size from /proc/<pid>/status (kB); null once the process is gone. */
  rssKb(): number | null {
    if (!this.running) return null;
    try {
      const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${this.pid}/status`, 'utf8'));
      return match ? Number(match[1]) : null;
    } catch {
      return null;
    }
  }

  /** Parsed JSON log lines (non-JSON lines, such as a crash trace on stderr, are returned as { raw }). */
  jsonLogs(): Array<Record<string, unknown>> {
    return this.logs.map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        return { raw: line };
      }
    });
  }

  async metricsText(): Promise<string> {
    return (await send({ port: this.adminPort, method: 'GET', path: '/metrics', timeoutMs: 10_000 })).body;
  }

  /** The value of an unlabelled gauge of its /metrics (0 when absent). */
  async gauge(name: string): Promise<number> {
    return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(await this.metricsText())?.[1] ?? 0);
  }
}

/** Samples a process's RSS every `everyMs` until stopped; peak in MB. */
export class RssSampler {
  private timer: NodeJS.Timeout | null = null;
  peakKb = 0;
  samples = 0;

  constructor(
    private readonly service: ServiceProcess,
    private readonly everyMs = 100,
  ) {}

  start(): this {
    const sample = (): void => {
      const kb = this.service.rssKb();
      if (kb !== null) {
        this.samples += 1;
        this.peakKb = Math.max(this.peakKb, kb);
      }
    };
    sample();
    this.timer = setInterval(sample, this.everyMs);
    return this;
  }

  stop(): number {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    return Math.round(this.peakKb / 1024);
  }
}
