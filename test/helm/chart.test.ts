/**
 * Static checks of the Helm chart: lint, render, Kubernetes schema validation, and the
 * properties the service relies on (ports, probes, hardening, secrets, routing, hooks).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import type { IJob } from 'kubernetes-models/batch/v1/Job';
import type { IIngress } from 'kubernetes-models/networking.k8s.io/v1/Ingress';
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import type { ISecret } from 'kubernetes-models/v1/Secret';
import type { IService } from 'kubernetes-models/v1/Service';
import type { IServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { parse } from 'yaml';
import { ConfigError, loadConfig, parseDuration } from '../../src/config';
import { SOURCE_ADDRESS_PRESETS } from '../../src/intake/sourceAddress';
import { strictFieldErrors } from './strictFields';
import {
  ALL_FEATURES_VALUES,
  CHART_DIR,
  CI_VALUES,
  MONITORING_API_VERSIONS,
  helm,
  helmLint,
  helmTemplate,
  only,
  render,
  validateManifests,
  type K8sObject,
  type ValidationReport,
} from './helm';
import { ruleGroupsOf } from './prometheus';

const allFeatures = { valuesFiles: [ALL_FEATURES_VALUES], apiVersions: MONITORING_API_VERSIONS };
const SECRET_KEYS = [
  'DATABASE_URL',
  'AMQP_URL',
  'JOURNAL_AMQP_URL',
  'SECOND_KEYS',
  'NOTIFY_BASIC_AUTH',
  'ADMIN_TOKEN',
  'EVENT_TEAM_TOKENS',
  'PAYMENT_API_CREDENTIALS',
  'CONSOLE_OPERATOR_TOKENS',
  'CONSOLE_VIEWER_TOKENS',
];

const as = <T>(object: K8sObject): T => object as unknown as T;
const deploymentOf = (objects: K8sObject[]): IDeployment => as<IDeployment>(only(objects, 'Deployment'));
const podSpecOf = (objects: K8sObject[]): IPodSpec => {
  const spec = deploymentOf(objects).spec?.template.spec;
  if (!spec) throw new Error('Deployment has no pod spec');
  return spec;
};
const containerOf = (spec: IPodSpec | undefined): IContainer => {
  const [container, ...others] = spec?.containers ?? [];
  if (!container || others.length > 0) throw new Error('expected exactly one container');
  return container;
};
const configOf = (objects: K8sObject[]): Record<string, string> =>
  as<IConfigMap>(only(objects, 'ConfigMap', '-notification-receiver')).data ?? {};
/** The server pods' NetworkPolicy (the migration pods have their own, named *-migrations). */
const serverPolicyOf = (objects: K8sObject[]): INetworkPolicy =>
  as<INetworkPolicy>(only(objects, 'NetworkPolicy', '-notification-receiver'));
/** The public Ingress (POST /notifications); the console's is named *-console. */
const publicIngressOf = (objects: K8sObject[]): IIngress =>
  as<IIngress>(only(objects, 'Ingress', '-notification-receiver'));
const consoleIngressOf = (objects: K8sObject[]): IIngress => as<IIngress>(only(objects, 'Ingress', '-console'));
/** The ports of each ingress rule of the server pods' NetworkPolicy, in order. */
const admittedPorts = (objects: K8sObject[]): Array<Array<string | number | undefined>> =>
  (serverPolicyOf(objects).spec?.ingress ?? []).map((r) => (r.ports ?? []).map((p) => p.port));
/** Whether a matchLabels selector selects pods with these labels. */
const selects = (
  matchLabels: Record<string, string> | undefined,
  labels: Record<string, string> | undefined,
): boolean => matchLabels !== undefined && Object.entries(matchLabels).every(([k, v]) => labels?.[k] === v);

/** The install notes `helm install --dry-run` prints with these `--set` values. */
function installNotes(set: string[]): string {
  const result = helm([
    ...['install', 'receiver', CHART_DIR, '--dry-run=client', '--namespace', 'payments'],
    ...set.flatMap((assignment) => ['--set', assignment]),
  ]);
  expect(result.status).toBe(0);
  return result.stdout.slice(result.stdout.indexOf('NOTES:'));
}

let defaults: K8sObject[];
let features: K8sObject[];

beforeAll(() => {
  defaults = render();
  features = render(allFeatures);
});

/** The defaults and every values file in the chart's ci/ folder (chart-testing installs each). */
const valuesCases: Array<[string, { valuesFiles: string[] }]> = [
  ['default values', { valuesFiles: [] }],
  ...CI_VALUES.map(([name, file]): [string, { valuesFiles: string[] }] => [name, { valuesFiles: [file] }]),
];
/** Each case rendered once, on first use, for a cluster that serves the monitoring CRDs. */
const renderedCases: Array<[string, () => K8sObject[]]> = valuesCases.map(([name, options]) => {
  let objects: K8sObject[] | undefined;
  return [name, () => (objects ??= render({ ...options, apiVersions: MONITORING_API_VERSIONS }))];
});

describe('helm lint --strict', () => {
  test('the ci folder holds the all-features values and more than one combination', () => {
    expect(CI_VALUES.map(([, file]) => file)).toContain(ALL_FEATURES_VALUES);
    expect(CI_VALUES.length).toBeGreaterThan(1);
  });

  test.each(valuesCases)('passes with %s', (_name, options) => {
    const result = helmLint(options);
    expect(`${result.stdout}${result.stderr}`).not.toMatch(/\[(ERROR|WARNING)\]/);
    expect(result.status).toBe(0);
  });
});

describe('rendered objects', () => {
  test('defaults render the core objects, and no monitoring.coreos.com kinds without the CRDs', () => {
    expect(defaults.map((o) => o.kind).sort()).toEqual(
      [
        'ConfigMap',
        'ConfigMap',
        'Deployment',
        'Job',
        'NetworkPolicy',
        'NetworkPolicy',
        'PodDisruptionBudget',
        'Service',
      ].sort(),
    );
  });

  test('every feature renders every kind', () => {
    expect([...new Set(features.map((o) => o.kind))].sort()).toEqual(
      [
        'ConfigMap',
        'Deployment',
        'HorizontalPodAutoscaler',
        'Ingress',
        'Job',
        'NetworkPolicy',
        'PodDisruptionBudget',
        'PrometheusRule',
        'Secret',
        'Service',
        'ServiceMonitor',
      ].sort(),
    );
  });

  /** Every case's objects validated in one validator process (it takes a second to load), then told apart. */
  let validated: ValidationReport[][] | undefined;
  const reportsOf = (name: string): ValidationReport[] | undefined => {
    validated ??= (() => {
      const cases = renderedCases.map(([, objects]) => objects());
      const reports = validateManifests(cases.flat());
      let from = 0;
      return cases.map((objects) => reports.slice(from, (from += objects.length)));
    })();
    return validated[renderedCases.findIndex(([caseName]) => caseName === name)];
  };

  test.each(renderedCases)('with %s, every object is valid against its Kubernetes schema', (name, objects) => {
    const reports = reportsOf(name);
    expect(reports).toHaveLength(objects().length);
    expect(reports?.filter((r) => r.errors.length > 0)).toEqual([]);
  });

  test.each(renderedCases)(
    'with %s, no object has a field its Kubernetes type does not define (e.g. a mis-indented line)',
    (_name, objects) => {
      expect(strictFieldErrors(objects())).toEqual([]);
    },
  );

  test('the unknown-field check finds a field at the wrong level', () => {
    const deployment = structuredClone(only(features, 'Deployment'));
    const spec = (deployment as unknown as IDeployment).spec;
    Object.assign(spec?.template.spec ?? {}, { readOnlyRootFilesystem: true }); // belongs in a container's securityContext
    expect(strictFieldErrors([deployment])).toEqual([expect.stringMatching(/^Deployment\/.*readOnlyRootFilesystem/s)]);
  });

  test('the validator itself rejects a broken object and an unknown kind', () => {
    const deployment = deploymentOf(features);
    const broken = structuredClone(deployment) as unknown as K8sObject;
    const container = containerOf((broken as unknown as IDeployment).spec?.template.spec);
    (container.ports ?? [])[0] = { containerPort: 'eighty' as unknown as number };
    const unknown: K8sObject = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } };
    const reports = validateManifests([broken, unknown]);
    expect(reports[0]?.errors.join('\n')).toMatch(/containerPort/);
    expect(reports[1]?.errors.join('\n')).toMatch(/unknown apiVersion\/kind/);
  });

  test('ServiceMonitor and PrometheusRule follow the CRDs ("auto") or the value', () => {
    const kinds = (objects: K8sObject[]): string[] => objects.map((o) => o.kind);
    expect(kinds(render({ apiVersions: MONITORING_API_VERSIONS }))).toEqual(
      expect.arrayContaining(['ServiceMonitor', 'PrometheusRule']),
    );
    expect(kinds(render({ set: ['serviceMonitor.enabled=true', 'prometheusRule.enabled=true'] }))).toEqual(
      expect.arrayContaining(['ServiceMonitor', 'PrometheusRule']),
    );
    const off = render({
      apiVersions: MONITORING_API_VERSIONS,
      set: ['serviceMonitor.enabled=false', 'prometheusRule.enabled=false'],
    });
    expect(kinds(off)).not.toContain('ServiceMonitor');
    expect(kinds(off)).not.toContain('PrometheusRule');
  });
});

describe('Deployment', () => {
  test('runs 2 replicas by default, and leaves the count to the HPA when autoscaling', () => {
    expect(deploymentOf(defaults).spec?.replicas).toBe(2);
    expect(deploymentOf(features).spec).not.toHaveProperty('replicas');
    const hpa = as<IHorizontalPodAutoscaler>(only(features, 'HorizontalPodAutoscaler'));
    expect(hpa.spec?.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: deploymentOf(features).metadata?.name,
    });
    expect(hpa.spec?.minReplicas).toBeGreaterThanOrEqual(2);
  });

  test.each([
    ['default values', () => defaults],
    ['every feature on', () => features],
  ])(
    'with %s, ports are the app defaults and the probes hit /livez and /readyz on the admin port',
    (_name, objects) => {
      const container = containerOf(podSpecOf(objects()));
      const ports = Object.fromEntries((container.ports ?? []).map((p) => [p.name, p.containerPort]));
      expect(ports).toEqual({ http: 8080, admin: 9090 });
      expect(configOf(objects())).toMatchObject({ PORT: '8080', ADMIN_PORT: '9090' });
      expect(container.startupProbe?.httpGet).toEqual({ path: '/livez', port: 'admin' });
      expect(container.livenessProbe?.httpGet).toEqual({ path: '/livez', port: 'admin' });
      expect(container.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'admin' });
      expect(container.resources?.requests).toBeDefined();
      expect(container.resources?.limits?.memory).toBeDefined();
    },
  );

  test("the server's V8 flags are on its command line: pretenuring off, 16 MiB semi-spaces by default, an old-space ceiling on request", () => {
    const command = (objects: ReturnType<typeof render>) => containerOf(podSpecOf(objects)).command;
    expect(command(defaults)).toEqual([
      'node',
      '--no-allocation-site-pretenuring',
      '--max-semi-space-size=16',
      'dist/main.js',
    ]);
    expect(command(render({ set: ['heapLimitMb=128'] }))).toEqual([
      'node',
      '--no-allocation-site-pretenuring',
      '--max-old-space-size=128',
      '--max-semi-space-size=16',
      'dist/main.js',
    ]);
    expect(command(render({ set: ['heapLimitMb=128', 'heapSemiSpaceMb=0'] }))).toEqual([
      'node',
      '--no-allocation-site-pretenuring',
      '--max-old-space-size=128',
      'dist/main.js',
    ]);
    expect(command(render({ set: ['heapSemiSpaceMb=0'] }))).toEqual([
      'node',
      '--no-allocation-site-pretenuring',
      'dist/main.js',
    ]);
    expect((containerOf(podSpecOf(defaults)).env ?? []).map((e) => e.name)).not.toContain('NODE_OPTIONS');
  });

  test.each([
    ['server pods, defaults', () => podSpecOf(defaults)],
    ['server pods, every feature on', () => podSpecOf(features)],
    ['migration Job, every feature on', () => as<IJob>(only(features, 'Job')).spec?.template.spec],
  ])('%s: security context is hardened', (_name, specOf) => {
    const spec = specOf();
    const container = containerOf(spec);
    expect(spec?.automountServiceAccountToken).toBe(false);
    expect(spec?.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    for (const id of [
      spec?.securityContext?.runAsUser,
      spec?.securityContext?.runAsGroup,
      spec?.securityContext?.fsGroup,
    ]) {
      expect(Number.isInteger(id)).toBe(true);
      expect(id).toBeGreaterThan(0);
    }
    expect(container.securityContext).toMatchObject({
      runAsNonRoot: true,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(container.securityContext?.capabilities?.add ?? []).toEqual([]);
    expect(container.securityContext?.privileged ?? false).toBe(false);
    const tmp = container.volumeMounts?.find((m) => m.mountPath === '/tmp');
    expect(spec?.volumes?.find((v) => v.name === tmp?.name)?.emptyDir).toBeDefined();
  });

  test('the grace period covers SHUTDOWN_TIMEOUT, the preStop sleep and the forced-exit margin, and follows them', () => {
    const check = (objects: K8sObject[], preStop: number): void => {
      const spec = podSpecOf(objects);
      const shutdownSeconds = Number(/^(\d+)s$/.exec(configOf(objects).SHUTDOWN_TIMEOUT ?? '')?.[1]);
      expect(shutdownSeconds).toBeGreaterThan(0);
      expect(containerOf(spec).lifecycle?.preStop?.sleep?.seconds ?? 0).toBe(preStop);
      // The app force-exits 5 s after SHUTDOWN_TIMEOUT; the kubelet must not SIGKILL before.
      expect(spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(shutdownSeconds + preStop + 5);
    };
    check(defaults, 5);
    check(features, 5);
    const longer = render({ set: ['config.shutdownTimeoutSeconds=45', 'preStopSleepSeconds=0'] });
    expect(configOf(longer).SHUTDOWN_TIMEOUT).toBe('45s');
    check(longer, 0);
  });

  test('a settings change changes the checksum annotation, so the pods roll', () => {
    const checksum = (objects: K8sObject[]): string | undefined =>
      deploymentOf(objects).spec?.template.metadata?.annotations?.['checksum/config'];
    expect(checksum(defaults)).toMatch(/^[a-f0-9]{64}$/);
    expect(checksum(render({ set: ['config.logLevel=debug'] }))).not.toBe(checksum(defaults));
    const secretChecksum = (objects: K8sObject[]): string | undefined =>
      deploymentOf(objects).spec?.template.metadata?.annotations?.['checksum/secret'];
    expect(secretChecksum(features)).toMatch(/^[a-f0-9]{64}$/);
    expect(secretChecksum(render({ ...allFeatures, set: ['secrets.secondKeys=1:other-key'] }))).not.toBe(
      secretChecksum(features),
    );
  });

  test('the ConfigMap carries no secret keys; the container reads them only from a Secret', () => {
    for (const objects of [defaults, features]) {
      // PAYMENT_API_URL is the payment service's public address, not a secret.
      expect(Object.keys(configOf(objects)).filter((k) => k !== 'PAYMENT_API_URL')).not.toEqual(
        expect.arrayContaining([expect.stringMatching(/URL|KEYS|AUTH|TOKEN|CREDENTIALS/)]),
      );
      const container = containerOf(podSpecOf(objects));
      for (const key of SECRET_KEYS) {
        const env = container.env?.find((e) => e.name === key);
        expect(env?.valueFrom?.secretKeyRef?.key).toBe(key);
        expect(env?.value).toBeUndefined();
      }
    }
  });
});

describe('secrets', () => {
  /** Every secret string of the all-features values, plus the passwords and keys inside them. */
  function secretStrings(): string[] {
    const values = parse(readFileSync(ALL_FEATURES_VALUES, 'utf8')) as { secrets: Record<string, string> };
    const whole = Object.values(values.secrets).filter((v) => v !== '');
    const parts = whole.flatMap((v) => v.match(/dummy-[a-z-]+-[0-9a-f]+/g) ?? []);
    expect(parts.length).toBeGreaterThanOrEqual(5); // the check below must have something to find
    return [...whole, ...parts];
  }

  test('no secret value appears in any rendered object other than a Secret', () => {
    const needles = secretStrings().flatMap((s) => [s, Buffer.from(s).toString('base64')]);
    const nonSecrets = features.filter((o) => o.kind !== 'Secret');
    for (const object of nonSecrets) {
      const text = JSON.stringify(object);
      for (const needle of needles) {
        if (text.includes(needle)) throw new Error(`${object.kind} ${object.metadata.name} contains a secret value`);
      }
    }
    // ...and the same check does find them in the chart-made Secret.
    const secret = as<ISecret>(only(features, 'Secret', '-notification-receiver'));
    expect(Object.keys(secret.data ?? {}).sort()).toEqual([...SECRET_KEYS].sort());
    expect(needles.some((n) => JSON.stringify(secret).includes(n))).toBe(true);
  });

  test('with secrets.existingSecret the chart makes no Secret and every reference names it', () => {
    const objects = render({ set: ['secrets.existingSecret=receiver-credentials'] });
    expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    const refs = JSON.stringify(objects).match(/"secretKeyRef":\{"name":"[^"]+"/g) ?? [];
    expect(refs.length).toBeGreaterThanOrEqual(10); // 9 in the Deployment, 1 in the Job
    expect(new Set(refs)).toEqual(new Set(['"secretKeyRef":{"name":"receiver-credentials"']));
  });

  test('existingSecret and secret values together are refused', () => {
    const result = helmTemplate({ set: ['secrets.existingSecret=x', 'secrets.secondKeys=1:k'] });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(/existingSecret cannot be combined/);
  });

  test('a chart-made Secret needs the database URL and the second keys', () => {
    const result = helmTemplate({ set: ['secrets.notifyBasicAuth=u:p'] });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(/secrets\.databaseUrl is required/);
  });

  test('reconciliation: with config.paymentApiUrl the pods get its settings, the credentials from the Secret and egress to the API', () => {
    const config = configOf(features);
    expect(config).toMatchObject({
      PAYMENT_API_URL: 'https://secure.payments.example.com',
      PAYMENT_API_ALLOW_HTTP: 'false',
      PAYMENT_API_TIMEOUT: '10s',
      PAYMENT_API_MAX_IN_FLIGHT: '4',
      PAYMENT_API_MAX_PER_SECOND: '10',
      RECONCILE_AFTER: '5m',
      RECONCILE_GIVE_UP: '7d',
      RECONCILE_INTERVAL: '30s',
    });
    const env = containerOf(podSpecOf(features)).env?.find((e) => e.name === 'PAYMENT_API_CREDENTIALS');
    expect(env?.valueFrom?.secretKeyRef).toMatchObject({ key: 'PAYMENT_API_CREDENTIALS', optional: false });
    const egressPorts = (serverPolicyOf(features).spec?.egress ?? []).flatMap((r) =>
      (r.ports ?? []).map((p) => p.port),
    );
    expect(egressPorts).toContain(443);

    const off = render({ ...allFeatures, set: ['config.paymentApiUrl='] });
    expect(configOf(off).PAYMENT_API_URL).toBeUndefined();
    expect(
      containerOf(podSpecOf(off)).env?.find((e) => e.name === 'PAYMENT_API_CREDENTIALS')?.valueFrom?.secretKeyRef,
    ).toMatchObject({ optional: true });
    expect((serverPolicyOf(off).spec?.egress ?? []).flatMap((r) => (r.ports ?? []).map((p) => p.port))).not.toContain(
      443,
    );
  });

  test('a chart-made Secret needs the payment API credentials when config.paymentApiUrl is set', () => {
    const result = helmTemplate({
      ...allFeatures,
      set: ['secrets.paymentApiCredentials='],
    });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(/secrets\.paymentApiCredentials is required/);
  });
});

describe('migrations hook', () => {
  const annotations = (object: K8sObject): Record<string, string> => object.metadata.annotations ?? {};

  test('a pre-install/pre-upgrade Job runs migrate.js, and the pods do not migrate on start', () => {
    for (const objects of [defaults, features]) {
      const job = only(objects, 'Job');
      expect(annotations(job)['helm.sh/hook']).toBe('pre-install,pre-upgrade');
      const container = containerOf(as<IJob>(job).spec?.template.spec);
      expect(container.command).toEqual(['node', 'dist/cli/migrate.js']);
      expect(container.env?.find((e) => e.name === 'DATABASE_URL')?.valueFrom?.secretKeyRef?.key).toBe('DATABASE_URL');
      expect(as<IJob>(job).spec?.template.spec?.restartPolicy).toBe('Never');
      expect(configOf(objects).MIGRATE_ON_START).toBe('false');
    }
  });

  test('the Job reads a chart-made Secret through a hook Secret created before it', () => {
    const job = only(features, 'Job');
    const hookSecret = only(features, 'Secret', '-migrations');
    expect(annotations(hookSecret)['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    expect(Number(annotations(hookSecret)['helm.sh/hook-weight'])).toBeLessThan(
      Number(annotations(job)['helm.sh/hook-weight']),
    );
    expect(annotations(hookSecret)['helm.sh/hook-delete-policy']).toContain('before-hook-creation');
    expect(Object.keys(as<ISecret>(hookSecret).data ?? {})).toEqual(['DATABASE_URL']);
    const ref = containerOf(as<IJob>(job).spec?.template.spec).env?.find((e) => e.name === 'DATABASE_URL')?.valueFrom
      ?.secretKeyRef;
    expect(ref?.name).toBe(hookSecret.metadata.name);
  });

  test('the Job does not depend on resources a first install has not created yet', () => {
    const spec = as<IJob>(only(features, 'Job')).spec?.template.spec;
    expect(JSON.stringify(spec)).not.toMatch(/configMapRef|configMapKeyRef/);
  });

  test('the Job pods get a NetworkPolicy of their own, created before them: nothing in, out only to DNS and Postgres', () => {
    for (const objects of [defaults, features]) {
      const job = only(objects, 'Job');
      const policyObject = only(objects, 'NetworkPolicy', '-migrations');
      const policy = as<INetworkPolicy>(policyObject);
      expect(annotations(policyObject)['helm.sh/hook']).toBe('pre-install,pre-upgrade');
      expect(Number(annotations(policyObject)['helm.sh/hook-weight'])).toBeLessThan(
        Number(annotations(job)['helm.sh/hook-weight']),
      );
      const podLabels = as<IJob>(job).spec?.template.metadata?.labels;
      expect(selects(policy.spec?.podSelector?.matchLabels, podLabels)).toBe(true);
      expect(
        selects(policy.spec?.podSelector?.matchLabels, deploymentOf(objects).spec?.template.metadata?.labels),
      ).toBe(false);
      expect(selects(serverPolicyOf(objects).spec?.podSelector?.matchLabels, podLabels)).toBe(false);
      expect(policy.spec?.policyTypes).toEqual(['Ingress', 'Egress']);
      expect(policy.spec?.ingress ?? []).toEqual([]);
      const egress = policy.spec?.egress ?? [];
      expect(egress.map((r) => (r.ports ?? []).map((p) => `${p.port}/${p.protocol}`))).toEqual([
        ['53/UDP', '53/TCP'],
        ['5432/TCP'],
      ]);
    }
    expect(render({ set: ['networkPolicy.enabled=false'] }).map((o) => o.kind)).not.toContain('NetworkPolicy');
    expect(
      render({ set: ['migrations.enabled=false'] }).filter((o) => o.metadata.name.endsWith('-migrations')),
    ).toEqual([]);
  });

  test('without the Job the pods migrate on start', () => {
    const objects = render({ set: ['migrations.enabled=false'] });
    expect(objects.map((o) => o.kind)).not.toContain('Job');
    expect(configOf(objects).MIGRATE_ON_START).toBe('true');
  });
});

describe('retention', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'chart-retention-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  /** A values file with these lines (YAML as a user writes it: `--set` would read a bare number as one). */
  const valuesFile = (name: string, yaml: string): string => {
    const file = path.join(dir, `${name}.yaml`);
    writeFileSync(file, yaml);
    return file;
  };

  const historyRules = (objects: K8sObject[]): Array<{ alert?: string; expr: string }> =>
    ruleGroupsOf(objects)
      .filter((g) => g.name.endsWith('.history'))
      .flatMap((g) => g.rules ?? [])
      .map((r) => ({ alert: r.alert, expr: String(r.expr) }));
  const retentionThreshold = (objects: K8sObject[]): number | undefined => {
    const expr = historyRules(objects).find((r) => r.alert === 'PaymentHistoryRetentionNotApplied')?.expr;
    return expr === undefined ? undefined : Number(/> (\d+)$/.exec(expr)?.[1]);
  };
  const monitored = (set: string[], valuesFiles: string[] = []): K8sObject[] =>
    render({ valuesFiles, set: ['prometheusRule.enabled=true', ...set] });

  test('the service applies HISTORY_RETENTION and BODY_RETENTION itself: the ConfigMap carries them, and no CronJob duplicates it', () => {
    expect(configOf(defaults)).toMatchObject({ HISTORY_RETENTION: '180d', BODY_RETENTION: '30d' });
    const values = parse(readFileSync(ALL_FEATURES_VALUES, 'utf8')) as {
      config: { historyRetention: string; bodyRetention: string };
    };
    // Not the chart's defaults, so the test sees the values and not hard-coded ones.
    expect([values.config.historyRetention, values.config.bodyRetention]).not.toEqual(['180d', '30d']);
    expect(configOf(features)).toMatchObject({
      HISTORY_RETENTION: values.config.historyRetention,
      BODY_RETENTION: values.config.bodyRetention,
    });
    for (const objects of [defaults, features]) {
      expect(objects.filter((o) => o.kind === 'CronJob' || o.metadata.name.endsWith('-purge'))).toEqual([]);
    }
  });

  test('off keeps history or bodies for ever, quoted or bare in a values file (which YAML reads as false)', () => {
    const bare = valuesFile('bare-off', 'config:\n  historyRetention: off\n  bodyRetention: off\n');
    const quoted = valuesFile('quoted-off', "config:\n  historyRetention: 'off'\n  bodyRetention: 'off'\n");
    for (const objects of [monitored([], [bare]), monitored([], [quoted])]) {
      expect(configOf(objects)).toMatchObject({ HISTORY_RETENTION: 'off', BODY_RETENTION: 'off' });
      expect(historyRules(objects).map((r) => r.alert)).toEqual([
        'PaymentHistoryPartitionsRunningOut',
        'PaymentHistoryDayMissing',
        'PaymentHistoryMaintainerAbsent',
        'PaymentHistoryMaintenanceFailing',
      ]);
    }
  });

  test.each(['180d', '4320h', '259200', '72h', '15552000s', '259200000ms', '10000m'])(
    "with historyRetention '%s', the retention alert's threshold is the retention as the app reads it, and two days",
    (retention) => {
      const seconds = (parseDuration(retention) ?? Number.NaN) / 1000;
      const file = valuesFile(`history-${retention}`, `config:\n  historyRetention: '${retention}'\n`);
      expect(retentionThreshold(monitored([], [file]))).toBe(seconds + 2 * 86_400);
    },
  );

  test('a retention the app would refuse is refused by the chart, saying why', () => {
    const refusals: Array<[string, RegExp]> = [
      ['config.historyRetention=71h', /config\.historyRetention must be at least 72h/],
      ['config.historyRetention=2d', /config\.historyRetention must be at least 72h/],
      ['config.bodyRetention=23h', /config\.bodyRetention must be at least 1d/],
      ['config.bodyRetention=0s', /config\.bodyRetention must be at least 1d/],
    ];
    for (const [set, message] of refusals) {
      const result = helmTemplate({ set: [set] });
      expect([set, result.status, result.stderr]).toEqual([set, 1, expect.stringMatching(message)]);
    }
    expect(configOf(render({ set: ['config.historyRetention=3d', 'config.bodyRetention=1d'] }))).toMatchObject({
      HISTORY_RETENTION: '3d',
      BODY_RETENTION: '1d',
    });
  });

  test('the history alerts read the active maintainer, but for the days ahead every pod measures, and are rendered whatever else is on', () => {
    for (const objects of [features, monitored(['config.relayEnabled=false'])]) {
      const rules = historyRules(objects);
      expect(rules.map((r) => r.alert)).toEqual([
        'PaymentHistoryPartitionsRunningOut',
        'PaymentHistoryDayMissing',
        'PaymentHistoryMaintainerAbsent',
        'PaymentHistoryMaintenanceFailing',
        'PaymentHistoryRetentionNotApplied',
      ]);
      for (const rule of rules.filter((r) => /oldest_day/.test(r.expr ?? '')))
        expect(rule.expr).toMatch(/and \(history_maintainer_active\{[^}]*\} == 1\)/);
      for (const rule of rules.filter((r) => /days_ahead/.test(r.expr ?? '')))
        expect(rule.expr).toMatch(/min\(history_partition_days_ahead\{[^}]*\}\)/);
    }
    expect(retentionThreshold(features)).toBe(4320 * 3600 + 2 * 86_400);
  });

  test('the install notes tell the retentions and the purge command that applies them now, rounded to keep more', () => {
    const notes = (set: string[]): string => {
      const result = helm(['install', 'receiver', CHART_DIR, '--dry-run=client', '--namespace', 'payments', ...set]);
      expect(result.status).toBe(0);
      return result.stdout.slice(result.stdout.indexOf('NOTES:'));
    };
    const command = 'kubectl -n payments exec deploy/receiver-notification-receiver -- node dist/cli/index.js purge';
    expect(notes([])).toContain(`${command} --days 30 --history-days 180 --dry-run`);
    // 36h and 100h: whole days, upwards, so the command never removes what the service still keeps.
    expect(notes(['--set', 'config.bodyRetention=36h,config.historyRetention=100h'])).toContain(
      `${command} --days 2 --history-days 5 --dry-run`,
    );
    expect(notes(['--set', 'config.historyRetention=off'])).toContain(`${command} --days 30 --dry-run`);
    const off = notes(['--set', 'config.historyRetention=off,config.bodyRetention=off']);
    expect(off).toMatch(/history .*: kept for ever[\s\S]*raw bodies .*: kept for ever/);
    expect(off).not.toContain('purge');
  });
});

describe('Service and Ingress', () => {
  test('the Service has the public and the admin port, selects only server pods, and is ClusterIP', () => {
    const service = as<IService>(only(features, 'Service'));
    expect(service.spec?.type).toBe('ClusterIP');
    expect(service.spec?.ports?.map((p) => [p.name, p.port, p.targetPort])).toEqual([
      ['http', 8080, 'http'],
      ['admin', 9090, 'admin'],
    ]);
    const podLabels = deploymentOf(features).spec?.template.metadata?.labels ?? {};
    expect(podLabels).toMatchObject(service.spec?.selector ?? { missing: 'selector' });
    const jobPodLabels = as<IJob>(only(features, 'Job')).spec?.template.metadata?.labels ?? {};
    expect(selects(service.spec?.selector, jobPodLabels)).toBe(false);
  });

  test('the Ingress routes only POST /notifications (exact) to the public port, over TLS', () => {
    const ingress = publicIngressOf(features);
    const rules = ingress.spec?.rules ?? [];
    expect(rules).toHaveLength(1);
    expect(rules[0]?.http?.paths).toEqual([
      {
        path: '/notifications',
        pathType: 'Exact',
        backend: { service: { name: only(features, 'Service').metadata.name, port: { name: 'http' } } },
      },
    ]);
    expect(ingress.spec?.defaultBackend).toBeUndefined();
    expect(ingress.spec?.tls).toEqual([{ hosts: [rules[0]?.host], secretName: expect.any(String) }]);
    expect(JSON.stringify(ingress)).not.toMatch(/admin|9090/);
  });

  test('the install notes tell the notifyUrl', () => {
    const result = helm([
      ...['install', 'receiver', CHART_DIR, '--dry-run=client', '--namespace', 'payments'],
      ...['--set', 'ingress.enabled=true', '--set', 'ingress.host=notify.example.com'],
      ...['--set', 'ingress.controllerCidrs={10.244.0.0/16}'],
    ]);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/NOTES:[\s\S]*https:\/\/notify\.example\.com\/notifications/);
  });

  test('an enabled Ingress needs a host', () => {
    const result = helmTemplate({ set: ['ingress.enabled=true'] });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(/ingress\.host is required/);
  });

  test('TRUST_PROXY believes no peer without an ingress, and only the ingress controller with one', () => {
    expect(configOf(defaults).TRUST_PROXY).toBe('none');
    const withIngress = render({
      set: [
        'ingress.enabled=true',
        'ingress.host=h.example.com',
        'ingress.controllerCidrs={10.244.0.0/16,10.245.0.0/16}',
      ],
    });
    expect(configOf(withIngress).TRUST_PROXY).toBe('10.244.0.0/16,10.245.0.0/16');
    expect(configOf(render({ set: ['config.trustProxy=192.168.0.0/24'] })).TRUST_PROXY).toBe('192.168.0.0/24');
  });

  test("an enabled Ingress needs the controller's addresses, and no hop count is ever trusted", () => {
    const missing = helmTemplate({ set: ['ingress.enabled=true', 'ingress.host=h.example.com'] });
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toMatch(/ingress\.controllerCidrs is required when ingress\.enabled/);
    for (const hops of ['1', '2']) {
      const result = helmTemplate({ set: [`config.trustProxy=${hops}`] });
      expect(result.status).not.toBe(0);
      expect(result.stderr).toMatch(/not a hop count/);
    }
  });

  test('with enforceAllowlist, the Ingress admits only the allowed sources, the presets expanded as the app expands them', () => {
    const ingressOf = (allowed: string) =>
      as<IIngress>(
        only(
          render({
            set: [
              'ingress.enabled=true',
              'ingress.host=h.example.com',
              'ingress.controllerCidrs={10.0.0.0/8}',
              'ingress.enforceAllowlist=true',
              `config.allowedSourceIps=${allowed.replace(/,/g, '\\,')}`,
            ],
          }),
          'Ingress',
        ),
      ).metadata?.annotations ?? {};
    const range = (allowed: string) => ingressOf(allowed)['nginx.ingress.kubernetes.io/whitelist-source-range'];
    expect(range('production')).toBe(SOURCE_ADDRESS_PRESETS.production.map((a) => `${a}/32`).join(','));
    expect(range('sandbox, 203.0.113.0/24')).toBe(
      [...SOURCE_ADDRESS_PRESETS.sandbox.map((a) => `${a}/32`), '203.0.113.0/24'].join(','),
    );
    expect(ingressOf('production')['nginx.ingress.kubernetes.io/proxy-body-size']).toBe('64k');
    expect(configOf(defaults).BODY_LIMIT).toBe('64kb');
    const any = helmTemplate({
      set: [
        'ingress.enabled=true',
        'ingress.host=h',
        'ingress.controllerCidrs={10.0.0.0/8}',
        'ingress.enforceAllowlist=true',
        'config.allowedSourceIps=any',
      ],
    });
    expect(any.stderr).toMatch(/cannot enforce config\.allowedSourceIps 'any'/);
  });
});

describe('console Ingress', () => {
  const consoleOn = ['consoleIngress.enabled=true', 'consoleIngress.host=console.example.com'] as const;

  test('off by default: no console Ingress, and the admin port admits no ingress controller', () => {
    expect(defaults.filter((o) => o.kind === 'Ingress')).toEqual([]);
    expect(admittedPorts(defaults)).toEqual([['http'], ['admin']]);
    expect(JSON.stringify(serverPolicyOf(defaults).spec?.ingress?.[1]?.from)).not.toContain('ingress-nginx');
    // The public Ingress alone does not bring the console's.
    const publicOnly = render({
      set: ['ingress.enabled=true', 'ingress.host=h.example.com', 'ingress.controllerCidrs={10.0.0.0/8}'],
    });
    expect(publicOnly.filter((o) => o.kind === 'Ingress').map((o) => o.metadata.name)).toEqual([
      'receiver-notification-receiver',
    ]);
    expect(admittedPorts(publicOnly)).toEqual([['http'], ['admin']]);
  });

  test('on: an Ingress of its own routes /console and below, only, to the admin port, over TLS on its own host', () => {
    const ingress = consoleIngressOf(features);
    const rules = ingress.spec?.rules ?? [];
    expect(rules).toHaveLength(1);
    expect(rules[0]?.host).toBe('console.payments.example.com');
    expect(rules[0]?.http?.paths).toEqual([
      {
        path: '/console',
        pathType: 'Prefix',
        backend: { service: { name: only(features, 'Service').metadata.name, port: { name: 'admin' } } },
      },
    ]);
    expect(ingress.spec?.defaultBackend).toBeUndefined();
    expect(ingress.spec?.tls).toEqual([
      { hosts: ['console.payments.example.com'], secretName: 'receiver-notification-receiver-console-tls' },
    ]);
    expect(ingress.metadata?.annotations).toEqual({
      'cert-manager.io/cluster-issuer': 'letsencrypt',
      'nginx.ingress.kubernetes.io/whitelist-source-range': '10.8.0.0/16',
    });
    // Apart from the public one: another object, another host, and the public one still never routes the admin port.
    const publicIngress = publicIngressOf(features);
    expect(publicIngress.metadata?.name).not.toBe(ingress.metadata?.name);
    expect(publicIngress.spec?.rules?.map((r) => r.host)).not.toContain(rules[0]?.host);
    expect(JSON.stringify(publicIngress)).not.toMatch(/admin|9090|console/);
    // Alone, without the public Ingress, and with no source range: any address, the console's sign-in applies.
    const alone = render({ set: [...consoleOn] });
    expect(alone.filter((o) => o.kind === 'Ingress').map((o) => o.metadata.name)).toEqual([
      'receiver-notification-receiver-console',
    ]);
    expect(consoleIngressOf(alone).metadata?.annotations).toBeUndefined();
  });

  test("on: the NetworkPolicy admits the console's ingress controller to the admin port, and no one new to the public port", () => {
    for (const objects of [features, render({ set: [...consoleOn] })]) {
      expect(admittedPorts(objects)).toEqual([['http'], ['admin'], ['admin']]);
      const rule = serverPolicyOf(objects).spec?.ingress?.[2];
      expect(rule?.from).toEqual([
        {
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } },
          podSelector: { matchLabels: { 'app.kubernetes.io/name': 'ingress-nginx' } },
        },
      ]);
    }
    const ownPeers = render({
      set: [
        ...consoleOn,
        'networkPolicy.consolePeers[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=ingress-internal',
      ],
    });
    expect(JSON.stringify(serverPolicyOf(ownPeers).spec?.ingress?.[2]?.from)).toContain('ingress-internal');
  });

  test("the console's settings reach the pods: tokens from the Secret, the rest from the ConfigMap", () => {
    expect(configOf(defaults)).toMatchObject({
      CONSOLE_SESSION_TTL: '8h',
      CONSOLE_SESSION_IDLE: '30m',
      CONSOLE_VIEWERS_SEE_PERSONAL_DATA: 'false',
      CONSOLE_QUIET_AFTER: '1h',
      CONSOLE_TIME_ZONE: 'UTC',
      CONSOLE_LOCALE: 'en-GB',
      CONSOLE_CONFIRM_WITHIN: '',
      AUDIT_RETENTION: '365d',
    });
    expect(
      configOf(render({ set: ['config.consoleTimeZone=Europe/Warsaw', 'config.consoleLocale=pl-PL'] })),
    ).toMatchObject({ CONSOLE_TIME_ZONE: 'Europe/Warsaw', CONSOLE_LOCALE: 'pl-PL' });
    const refs = (containerOf(podSpecOf(defaults)).env ?? []).filter((e) => e.name.startsWith('CONSOLE_'));
    expect(refs.map((e) => [e.name, e.valueFrom?.secretKeyRef?.key, e.valueFrom?.secretKeyRef?.optional])).toEqual([
      ['CONSOLE_OPERATOR_TOKENS', 'CONSOLE_OPERATOR_TOKENS', true],
      ['CONSOLE_VIEWER_TOKENS', 'CONSOLE_VIEWER_TOKENS', true],
    ]);
    expect(configOf(render({ set: ['config.auditRetention=off'] })).AUDIT_RETENTION).toBe('off');
    const tooShort = helmTemplate({ set: ['config.auditRetention=12h'] });
    expect([tooShort.status, tooShort.stderr]).toEqual([
      1,
      expect.stringMatching(/auditRetention must be at least 1d/),
    ]);
  });

  test('the console Ingress needs a token; a chart-made Secret carries the console tokens', () => {
    const base = ['secrets.databaseUrl=postgres://u@h:5432/d', 'secrets.secondKeys=1:k', 'config.relayEnabled=false'];
    const noToken = helmTemplate({ set: [...base, ...consoleOn] });
    expect([noToken.status, noToken.stderr]).toEqual([1, expect.stringMatching(/consoleIngress\.enabled needs/)]);
    const withToken = render({
      set: [...base, ...consoleOn, 'secrets.consoleViewerTokens=vera:viewer-token-0123456789'],
    });
    expect(Object.keys(as<ISecret>(only(withToken, 'Secret', '-notification-receiver')).data ?? {})).toEqual(
      expect.arrayContaining(['CONSOLE_VIEWER_TOKENS']),
    );
    // Sessions are held in the database now: no secret signs them. An older values file that still sets one
    // upgrades all the same; the secret reaches no object, and the install notes say to remove it.
    const retired = helmTemplate({ set: [...base, 'secrets.consoleSessionSecret=0123456789abcdef0123456789abcdef'] });
    expect(retired.status).toBe(0);
    expect(retired.stdout).not.toContain(Buffer.from('0123456789abcdef0123456789abcdef').toString('base64'));
    expect(retired.stdout).not.toContain('CONSOLE_SESSION_SECRET');
  });

  test("the admin port answers the Service's names, the console Ingress's host and config.adminOrigins (ADMIN_ORIGINS)", () => {
    expect(configOf(defaults).ADMIN_ORIGINS).toBe(
      [
        'http://receiver-notification-receiver:9090',
        'http://receiver-notification-receiver.payments:9090',
        'http://receiver-notification-receiver.payments.svc:9090',
        'http://receiver-notification-receiver.payments.svc.cluster.local:9090',
      ].join(','),
    );
    const withConsole = configOf(
      render({
        set: [
          ...['secrets.databaseUrl=postgres://u@h:5432/d', 'secrets.secondKeys=1:k', 'config.relayEnabled=false'],
          ...consoleOn,
          'secrets.consoleViewerTokens=vera:viewer-token-0123456789',
          'config.adminOrigins={https://tools.example.com}',
        ],
      }),
    ).ADMIN_ORIGINS;
    expect(withConsole?.split(',').slice(4)).toEqual(['https://console.example.com', 'https://tools.example.com']);
    expect(helmTemplate({ set: ['config.adminOrigins={https://tools.example.com/path}'] }).status).toBe(1);
  });

  test('on without a host, or on the public host, is refused, saying why', () => {
    const noHost = helmTemplate({ set: ['consoleIngress.enabled=true'] });
    expect([noHost.status, noHost.stderr]).toEqual([1, expect.stringMatching(/consoleIngress\.host is required/)]);
    const sameHost = helmTemplate({
      set: [
        'consoleIngress.enabled=true',
        'consoleIngress.host=Notify.example.com',
        'ingress.enabled=true',
        'ingress.host=notify.example.com',
        'ingress.controllerCidrs={10.0.0.0/8}',
      ],
    });
    expect([sameHost.status, sameHost.stderr]).toEqual([
      1,
      expect.stringMatching(/consoleIngress\.host must differ from ingress\.host/),
    ]);
  });

  test('the install notes tell support staff how to reach the console: port-forward when off, the host when on', () => {
    const off = installNotes([]);
    expect(off).toContain('kubectl -n payments port-forward svc/receiver-notification-receiver 9090');
    expect(off).toContain('http://127.0.0.1:9090/console');
    const on = installNotes([...consoleOn, 'consoleIngress.allowedCidrs={10.8.0.0/16}']);
    expect(on).toMatch(/Support console[\s\S]*https:\/\/console\.example\.com\/console/);
    expect(on).toContain('10.8.0.0/16');
    expect(on).not.toContain('127.0.0.1:9090/console');
  });
});

describe('availability and network', () => {
  test('the PodDisruptionBudget covers the server pods', () => {
    const pdb = as<IPodDisruptionBudget>(only(defaults, 'PodDisruptionBudget'));
    expect(pdb.spec?.maxUnavailable).toBe(1);
    expect(deploymentOf(defaults).spec?.template.metadata?.labels).toMatchObject(
      pdb.spec?.selector?.matchLabels ?? { missing: 'selector' },
    );
  });

  test('the NetworkPolicy admits the ingress controller to the public port and Prometheus to the admin port only', () => {
    for (const objects of [defaults, features]) {
      const policy = serverPolicyOf(objects);
      expect(policy.spec?.policyTypes).toEqual(['Ingress', 'Egress']);
      expect(deploymentOf(objects).spec?.template.metadata?.labels).toMatchObject(
        policy.spec?.podSelector?.matchLabels ?? { missing: 'selector' },
      );
      const rules = (policy.spec?.ingress ?? []).slice(0, 2); // a third rule, the console's, is checked below
      expect(admittedPorts(objects).slice(0, 2)).toEqual([['http'], ['admin']]);
      for (const rule of rules) expect(rule.from?.length ?? 0).toBeGreaterThan(0); // an empty "from" admits everyone
      expect(JSON.stringify(rules[0]?.from)).toContain('ingress-nginx');
      expect(JSON.stringify(rules[1]?.from)).toContain('prometheus');
      const egressPorts = (policy.spec?.egress ?? []).flatMap((r) => (r.ports ?? []).map((p) => p.port));
      expect(egressPorts).toEqual(expect.arrayContaining([53, 5432, 5672, 5671]));
    }
  });

  test('an empty or missing peer list is refused (it would admit everyone)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'chart-values-'));
    try {
      const emptyPeers = path.join(dir, 'empty-peers.yaml');
      writeFileSync(emptyPeers, 'networkPolicy:\n  adminPeers: []\n');
      const emptyConsolePeers = path.join(dir, 'empty-console-peers.yaml');
      writeFileSync(emptyConsolePeers, 'networkPolicy:\n  consolePeers: []\n');
      const options = [
        { valuesFiles: [emptyPeers] },
        { valuesFiles: [emptyConsolePeers] },
        { set: ['networkPolicy.publicPeers=null'] },
        { set: ['networkPolicy.consolePeers=null'] },
      ];
      for (const option of options) {
        const result = helmTemplate(option);
        expect(result.status).not.toBe(0);
        expect(result.stderr).toMatch(/schema/);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the ServiceMonitor scrapes the admin port of this Service', () => {
    const monitor = as<IServiceMonitor>(only(features, 'ServiceMonitor'));
    expect(monitor.spec.endpoints?.map((e) => [e.port, e.path])).toEqual([['admin', '/metrics']]);
    expect(only(features, 'Service').metadata.labels).toMatchObject(
      monitor.spec.selector.matchLabels ?? { missing: 'selector' },
    );
  });

  test('the Grafana dashboard is a ConfigMap labelled for the sidecar, holding valid JSON', () => {
    const dashboard = as<IConfigMap>(only(features, 'ConfigMap', '-dashboard'));
    expect(dashboard.metadata?.labels?.grafana_dashboard).toBe('1');
    const files = Object.values(dashboard.data ?? {});
    expect(files).toHaveLength(1);
    const json = JSON.parse(files[0] ?? '') as { title?: string; panels?: unknown[] };
    expect(json.title).toBeTruthy();
    expect(json.panels?.length).toBeGreaterThan(5);
  });
});

describe('the journal of recorded notifications and the failover watch', () => {
  const chartMade = [
    'secrets.databaseUrl=postgres://u@h:5432/d',
    'secrets.secondKeys=1:k',
    'config.relayEnabled=false',
  ];
  const monitoring = ['prometheusRule.enabled=true'];
  const egressOf = (objects: K8sObject[]): Array<{ ports: Array<string | number | undefined>; to: unknown }> =>
    (serverPolicyOf(objects).spec?.egress ?? []).map((r) => ({ ports: (r.ports ?? []).map((p) => p.port), to: r.to }));
  const egressPorts = (objects: K8sObject[]): Array<string | number | undefined> =>
    egressOf(objects).flatMap((r) => r.ports);
  const failoverRules = (objects: K8sObject[]): Array<{ alert?: string; expr: string }> =>
    ruleGroupsOf(objects)
      .filter((g) => g.name.endsWith('.failover'))
      .flatMap((g) => g.rules ?? [])
      .map((r) => ({ alert: r.alert, expr: String(r.expr) }));
  const journalRef = (objects: K8sObject[]) =>
    containerOf(podSpecOf(objects)).env?.find((e) => e.name === 'JOURNAL_AMQP_URL')?.valueFrom?.secretKeyRef;

  test('its settings reach the pods: JOURNAL_* and FAILOVER_RECONCILE_WINDOW from the ConfigMap, JOURNAL_AMQP_URL from the Secret', () => {
    expect(configOf(defaults)).toMatchObject({
      JOURNAL_RETENTION: '1h',
      JOURNAL_QUEUE: 'payment-notification-receiver.journal',
      JOURNAL_MAX_BYTES: '1gb',
      FAILOVER_RECONCILE_WINDOW: '10m',
    });
    const values = parse(readFileSync(ALL_FEATURES_VALUES, 'utf8')) as {
      config: Record<string, string>;
      secrets: Record<string, string>;
    };
    const { journalRetention, journalQueue, journalMaxBytes, failoverReconcileWindow } = values.config;
    // Not the chart's defaults, so the test sees the values and not hard-coded ones.
    expect([journalRetention, journalQueue, journalMaxBytes, failoverReconcileWindow]).toEqual([
      expect.not.stringMatching(/^1h$/),
      expect.not.stringMatching(/^payment-notification-receiver\.journal$/),
      expect.not.stringMatching(/^1gb$/),
      expect.not.stringMatching(/^10m$/),
    ]);
    expect(configOf(features)).toMatchObject({
      JOURNAL_RETENTION: journalRetention,
      JOURNAL_QUEUE: journalQueue,
      JOURNAL_MAX_BYTES: journalMaxBytes,
      FAILOVER_RECONCILE_WINDOW: failoverReconcileWindow,
    });
    const secret = as<ISecret>(only(features, 'Secret', '-notification-receiver'));
    expect(Buffer.from(secret.data?.JOURNAL_AMQP_URL ?? '', 'base64').toString('utf8')).toBe(
      values.secrets.journalAmqpUrl,
    );
    // Optional whatever the Secret: without the key the journal is on AMQP_URL's broker and vhost.
    for (const objects of [defaults, features]) expect(journalRef(objects)).toMatchObject({ optional: true });
    const withoutIt = render({ set: [...chartMade, 'secrets.amqpUrl=amqp://u:p@h:5672/v'] });
    expect(Object.keys(as<ISecret>(only(withoutIt, 'Secret', '-notification-receiver')).data ?? {})).not.toContain(
      'JOURNAL_AMQP_URL',
    );
    // It is a secret value like the others: given alone, it asks for the rest of a chart-made Secret.
    const alone = helmTemplate({ set: ['secrets.journalAmqpUrl=amqp://u:p@h:5672/journal'] });
    expect([alone.status, alone.stderr]).toEqual([1, expect.stringMatching(/secrets\.databaseUrl is required/)]);
  });

  test('a journal setting the app would refuse is refused by the chart, saying why, and one it takes is taken', () => {
    // The app's own reading of each value decides which the chart must refuse.
    const appTakes = (variable: string, value: string): boolean => {
      try {
        loadConfig({ [variable]: value });
        return true;
      } catch (error) {
        if (error instanceof ConfigError && error.problems.every((p) => p.startsWith(`${variable}:`))) return false;
        throw error;
      }
    };
    const cases: Array<[key: string, variable: string, values: string[], refusal: RegExp]> = [
      [
        'journalRetention',
        'JOURNAL_RETENTION',
        ['4m', '299999ms', '300000ms', '5m', '1h', '24h', '86400000ms', '86400001ms', '1441m', '25h', 'off'],
        /config\.journalRetention must be from 5m to 24h, or off/,
      ],
      [
        'journalMaxBytes',
        'JOURNAL_MAX_BYTES',
        ['15mb', '16383kb', '16mb', '1.5gb', '64gb', '65536mb', '65537mb', '65gb', '1tb'],
        /config\.journalMaxBytes must be a size from 16mb to 64gb/,
      ],
      [
        'failoverReconcileWindow',
        'FAILOVER_RECONCILE_WINDOW',
        ['0', '0s', '10m', '86400', '24h', '86401s', '1441m', '2d'],
        /config\.failoverReconcileWindow must be at most 24h/,
      ],
    ];
    for (const [key, variable, candidates, refusal] of cases) {
      for (const value of candidates) {
        const result = helmTemplate({ set: [`config.${key}=${value}`] });
        const taken = appTakes(variable, value);
        expect([key, value, result.status, result.status === 0 ? '' : result.stderr]).toEqual([
          key,
          value,
          taken ? 0 : 1,
          taken ? '' : expect.stringMatching(refusal),
        ]);
      }
    }
    // YAML's bare off (false) is off too.
    expect(configOf(render({ set: ['config.journalRetention=false'] })).JOURNAL_RETENTION).toBe('off');
  });

  test("the pods reach the journal's broker: the RabbitMQ rule with the relay off, a rule of its own for another broker", () => {
    const rabbitmq = [5672, 5671];
    // Every feature: the events' broker, and the journal's own (ci/all-features-values.yaml) on its port, to its address.
    expect(egressOf(features)).toEqual(
      expect.arrayContaining([
        { ports: rabbitmq, to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'mq' } } }] },
        { ports: [5671], to: [{ ipBlock: { cidr: '10.40.0.0/24' } }] },
      ]),
    );
    // No relay, but the journal (a Secret you manage is taken to hold a broker's address).
    expect(egressOf(render({ set: ['config.relayEnabled=false'] }))).toContainEqual({ ports: rabbitmq, to: undefined });
    expect(
      egressOf(render({ set: [...chartMade, 'secrets.journalAmqpUrl=amqp://u:p@h:5672/journal'] })),
    ).toContainEqual({ ports: rabbitmq, to: undefined });
    // No relay and no journal (off, or a chart-made Secret without a broker): no broker at all, nor the journal's rule.
    for (const set of [
      ['config.relayEnabled=false', 'config.journalRetention=off', 'networkPolicy.egress.journal.ports={5673}'],
      [...chartMade, 'networkPolicy.egress.journal.ports={5673}'],
    ]) {
      expect(egressPorts(render({ set }))).not.toEqual(expect.arrayContaining([5672]));
      expect(egressPorts(render({ set }))).not.toContain(5673);
    }
  });

  test('the failover alerts are rendered whatever else is on, the journal one only with a journal', () => {
    const alerts = (set: string[]): Array<string | undefined> =>
      failoverRules(render({ set: [...monitoring, ...set] })).map((r) => r.alert);
    const watch = ['PaymentDatabaseFailedOver', 'PaymentDatabaseWritesFailing'];
    expect(failoverRules(features).map((r) => r.alert)).toEqual([...watch, 'PaymentJournalNotWriting']);
    expect(alerts(['config.relayEnabled=false'])).toEqual([...watch, 'PaymentJournalNotWriting']);
    expect(alerts(['config.journalRetention=off'])).toEqual(watch);
    expect(alerts(chartMade)).toEqual(watch);
    const writesFailing = (set: string[]): string | undefined =>
      failoverRules(render({ set: [...monitoring, ...set] })).find((r) => r.alert === 'PaymentDatabaseWritesFailing')
        ?.expr;
    expect(writesFailing([])).toMatch(/\) > 30$/);
    expect(writesFailing(['prometheusRule.databaseWritesFailingSeconds=90'])).toMatch(/\) > 90$/);
    // Every pod's series: the release's selector on every metric they read.
    for (const { expr } of failoverRules(features))
      for (const selector of expr.match(/\{[^}]*\}/g) ?? [])
        expect(selector).toMatch(/^\{namespace="payments",job="receiver-notification-receiver"/);
  });

  test('the install notes say where the journal is and what it holds, or that there is none', () => {
    expect(installNotes([])).toMatch(
      /queue payment-notification-receiver\.journal, each entry kept 1h[\s\S]*a vhost only/,
    );
    expect(installNotes([...chartMade, 'secrets.amqpUrl=amqp://u:p@h:5672/v'])).toContain(
      "It is on AMQP_URL's vhost now, beside the events: give it one of its own (secrets.journalAmqpUrl).",
    );
    expect(installNotes(['config.journalRetention=off'])).toMatch(
      /Journal[^\n]*\n {2}off \(config\.journalRetention off\)/,
    );
    expect(installNotes(chartMade)).toContain('off (no broker: secrets.amqpUrl and secrets.journalAmqpUrl are empty)');
  });
});

describe('the chart README', () => {
  const readme = readFileSync(path.join(CHART_DIR, 'README.md'), 'utf8');
  /** The first column of the table under a heading (its rows' `code` or plain names). */
  const tableKeys = (heading: string): string[] => {
    const section = readme.slice(readme.indexOf(`\n${heading}\n`));
    const table = section.slice(0, section.indexOf('\n\n', section.indexOf('\n|')));
    return [...table.matchAll(/^\| `?([^`|]+?)`? \|/gm)]
      .map((m) => m[1] ?? '')
      .filter((k) => !/^(Key|Alert|-+)$/.test(k));
  };

  test('every value has a row in the values table', () => {
    const rows = new Set(tableKeys('## Values'));
    const values = parse(readFileSync(path.join(CHART_DIR, 'values.yaml'), 'utf8')) as Record<string, unknown>;
    // A key is documented by its own row or by its parent's (a whole object, such as `resources`).
    const undocumented = (node: Record<string, unknown>, prefix: string): string[] =>
      Object.entries(node).flatMap(([key, value]) => {
        const name = `${prefix}${key}`;
        if (rows.has(name)) return [];
        const isObject = typeof value === 'object' && value !== null && !Array.isArray(value);
        return isObject && Object.keys(value).length > 0
          ? undocumented(value as Record<string, unknown>, `${name}.`)
          : [name];
      });
    expect(undocumented(values, '')).toEqual([]);
  });

  test('every alert has a row in the alerts table', () => {
    expect(tableKeys('### Alerts').sort()).toEqual(
      ruleGroupsOf(features)
        .flatMap((g) => g.rules ?? [])
        .flatMap((r) => (r.alert ? [r.alert] : []))
        .sort(),
    );
  });
});

describe('values.schema.json', () => {
  const schemaFailures: [string, string[]][] = [
    ['an unknown top-level key', ['replicaCont=3']],
    ['an unknown nested key', ['config.logLevell=debug']],
    ['an unknown key in a list item', ['networkPolicy.publicPeers[0].podSelecter.app=x']],
    ['a string for an integer', ['replicaCount=two']],
    ['a string for a boolean', ['config.relayEnabled=maybe']],
    ['a value outside its enum', ['config.logLevel=verbose']],
    ['the purge CronJob, gone (the service purges and removes history itself)', ['purge.enabled=true']],
    ['a history retention in words', ['config.historyRetention=180 days']],
    ['a history retention of a negative duration', ['config.historyRetention=-1d']],
    ['a body retention other than a duration or off', ['config.bodyRetention=forever']],
    ['a body retention of true', ['config.bodyRetention=true']],
    ['an unknown key of the console Ingress', ['consoleIngress.path=/']],
    ["a journal queue of the broker's own", ['config.journalQueue=amq.journal']],
    ['a journal queue with a control character', ['config.journalQueue=journal\u0007']],
    ['a journal size without its unit', ['config.journalMaxBytes=1g']],
    ['a journal broker that is not AMQP', ['secrets.journalAmqpUrl=https://rabbitmq.mq.svc/journal']],
    ['a failover window of off', ['config.failoverReconcileWindow=off']],
  ];

  test.each(schemaFailures)('helm template and lint reject %s', (_name, set) => {
    for (const result of [helmTemplate({ set }), helmLint({ set })]) {
      expect(result.status).not.toBe(0);
      expect(`${result.stdout}${result.stderr}`).toMatch(/schema/i);
    }
  });

  test('every object the schema defines rejects unknown keys', () => {
    const schema = JSON.parse(readFileSync(path.join(CHART_DIR, 'values.schema.json'), 'utf8')) as unknown;
    const open: string[] = [];
    const walk = (node: unknown, where: string): void => {
      if (typeof node !== 'object' || node === null) return;
      const record = node as Record<string, unknown>;
      if (record.type === 'object' && record.properties !== undefined && record.additionalProperties !== false)
        open.push(where);
      for (const [key, child] of Object.entries(record)) walk(child, `${where}/${key}`);
    };
    walk(schema, '#');
    expect(open).toEqual([]);
  });
});
