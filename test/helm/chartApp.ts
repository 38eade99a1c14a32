/**
 * The chart's workloads run on this machine the way their pods run them: the objects rendered with every
 * feature on, a container's environment built from the rendered ConfigMaps and Secrets as the kubelet builds
 * it, and its command run against this checkout's dist/ (built by jest's globalSetup). Used by live.test.ts
 * and liveDashboard.test.ts.
 */
import path from 'node:path';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IJob } from 'kubernetes-models/batch/v1/Job';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { ISecret } from 'kubernetes-models/v1/Secret';
import { freePort, start, waitForStatus, type RunningApp } from './app';
import {
  ALL_FEATURES_VALUES,
  CHART_DIR,
  MONITORING_API_VERSIONS,
  REPO_ROOT,
  helm,
  only,
  render,
  type K8sObject,
} from './helm';

/** The release as rendered: `helm template receiver ... --namespace payments`. */
export const NAMESPACE = 'payments';

export const objects = render({ valuesFiles: [ALL_FEATURES_VALUES], apiVersions: MONITORING_API_VERSIONS });
export const as = <T>(object: K8sObject): T => object as unknown as T;

export function firstContainer(containers: IContainer[] | undefined): IContainer {
  const [container] = containers ?? [];
  if (!container) throw new Error('no container');
  return container;
}

/** A container's environment as the kubelet would build it from the rendered ConfigMaps and Secrets. */
export function environmentOf(container: IContainer): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    const name = source.configMapRef?.name;
    if (!name) throw new Error('only configMapRef envFrom is resolved here');
    const configMap = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === name);
    if (!configMap) throw new Error(`envFrom names ConfigMap ${name}, which the chart does not render`);
    Object.assign(env, as<IConfigMap>(configMap).data);
  }
  for (const variable of container.env ?? []) {
    if (variable.value !== undefined) {
      env[variable.name] = variable.value;
      continue;
    }
    const ref = variable.valueFrom?.secretKeyRef;
    if (!ref) throw new Error(`${variable.name}: only value and secretKeyRef are resolved here`);
    const secret = objects.find((o) => o.kind === 'Secret' && o.metadata.name === ref.name);
    const data = secret ? as<ISecret>(secret).data?.[ref.key] : undefined;
    if (data === undefined) {
      if (ref.optional) continue;
      throw new Error(`${variable.name}: Secret ${ref.name} key ${ref.key} is not rendered`);
    }
    env[variable.name] = Buffer.from(data, 'base64').toString('utf8');
  }
  return env;
}

/** The image's command with its relative script resolved against this checkout. */
function commandIn(command: string[]): string[] {
  return command.map((arg, i) => (i > 0 && arg.startsWith('dist/') ? path.join(REPO_ROOT, arg) : arg));
}

/** Runs a command to its end (killed after 45 s, so it never outlives the test). */
export async function runToEnd(
  command: string[],
  cwd: string,
  env: Record<string, string>,
): Promise<{ code: number | string; output: string }> {
  const run = start(commandIn(command), cwd, env);
  const killer = setTimeout(() => run.child.kill('SIGKILL'), 45_000);
  const code = await run.exited;
  clearTimeout(killer);
  return { code, output: run.output() };
}

/**
 * The commands the install notes tell an operator to run in a server pod (`kubectl exec deploy/... -- <command>`),
 * as `helm install --dry-run` prints them with every feature on.
 */
export function notesExecCommands(): string[][] {
  const installed = helm([
    ...['install', 'receiver', CHART_DIR, '--dry-run=client', '--namespace', NAMESPACE],
    ...['--values', ALL_FEATURES_VALUES],
  ]);
  if (installed.status !== 0) throw new Error(`helm install --dry-run failed:\n${installed.stderr}`);
  return [...installed.stdout.matchAll(/ exec deploy\/\S+ -- (.+)$/gm)].map((match) => (match[1] ?? '').split(' '));
}

/** The Deployment's server container, as rendered. */
export const serverContainer = (): IContainer =>
  firstContainer(as<IDeployment>(only(objects, 'Deployment')).spec?.template.spec?.containers);

/** The migration Job's container, run with its environment against `databaseUrl`. */
export async function runMigrationJob(
  cwd: string,
  databaseUrl: string,
): Promise<{ env: Record<string, string>; code: number | string; output: string }> {
  const container = firstContainer(as<IJob>(only(objects, 'Job')).spec?.template.spec?.containers);
  const env = { ...environmentOf(container), DATABASE_URL: databaseUrl };
  return { env, ...(await runToEnd(container.command ?? [], cwd, env)) };
}

export interface RunningServer {
  app: RunningApp;
  container: IContainer;
  /** The server container's environment as the chart renders it (before this machine's overrides). */
  chartEnv: Record<string, string>;
  publicPort: number;
  adminPort: number;
}

/**
 * The Deployment's server container with its environment, on free loopback ports, ready; `overrides` stand for
 * what this machine has instead of the cluster's (a broker, say).
 */
export async function startServer(
  cwd: string,
  databaseUrl: string,
  overrides: Record<string, string> = {},
): Promise<RunningServer> {
  const container = serverContainer();
  const chartEnv = environmentOf(container);
  const publicPort = await freePort();
  const adminPort = await freePort();
  const app = start(['node', path.join(REPO_ROOT, 'dist', 'main.js')], cwd, {
    ...chartEnv,
    // This machine, not a pod: loopback, free ports, the local database, no broker (a relay runs apart).
    HOST: '127.0.0.1',
    PORT: String(publicPort),
    ADMIN_PORT: String(adminPort),
    DATABASE_URL: databaseUrl,
    RELAY_ENABLED: 'false',
    ALLOWED_SOURCE_IPS: 'any',
    // So that one slow sender fills it, and liveDashboard.test.ts gets a public 5xx (503 busy).
    UNVERIFIED_BODIES_LIMIT: '64kb',
    ...overrides,
  });
  await waitForStatus(app, `http://127.0.0.1:${adminPort}/readyz`, 200, 30_000);
  return { app, container, chartEnv, publicPort, adminPort };
}
