/**
 * Static checks of the Helm chart: lint, render, Kubernetes schema validation, and the
 * properties the service relies on (ports, probes, hardening, secrets, routing, hooks).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import type { ICronJob } from 'kubernetes-models/batch/v1/CronJob';
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
} from './helm';

const allFeatures = { valuesFiles: [ALL_FEATURES_VALUES], apiVersions: MONITORING_API_VERSIONS };
const SECRET_KEYS = [
  'DATABASE_URL',
  'AMQP_URL',
  'SECOND_KEYS',
  'NOTIFY_BASIC_AUTH',
  'ADMIN_TOKEN',
  'PAYMENT_API_CREDENTIALS',
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
const cronJobOf = (objects: K8sObject[]): ICronJob => as<ICronJob>(only(objects, 'CronJob'));
const purgePodSpecOf = (objects: K8sObject[]): IPodSpec => {
  const spec = cronJobOf(objects).spec?.jobTemplate.spec?.template.spec;
  if (!spec) throw new Error('CronJob has no pod spec');
  return spec;
};
/** The server pods' NetworkPolicy (the purge pods have their own, named *-purge). */
const serverPolicyOf = (objects: K8sObject[]): INetworkPolicy =>
  as<INetworkPolicy>(only(objects, 'NetworkPolicy', '-notification-receiver'));
/** Whether a matchLabels selector selects pods with these labels. */
const selects = (
  matchLabels: Record<string, string> | undefined,
  labels: Record<string, string> | undefined,
): boolean => matchLabels !== undefined && Object.entries(matchLabels).every(([k, v]) => labels?.[k] === v);

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
        'CronJob',
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

  test.each(renderedCases)('with %s, every object is valid against its Kubernetes schema', (_name, objects) => {
    const reports = validateManifests(objects());
    expect(reports).toHaveLength(objects().length);
    expect(reports.filter((r) => r.errors.length > 0)).toEqual([]);
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
    ['purge CronJob, every feature on', () => purgePodSpecOf(features)],
    ['purge CronJob, defaults + purge.enabled', () => purgePodSpecOf(render({ set: ['purge.enabled=true'] }))],
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
    const objects = render({ set: ['secrets.existingSecret=receiver-credentials', 'purge.enabled=true'] });
    expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    const refs = JSON.stringify(objects).match(/"secretKeyRef":\{"name":"[^"]+"/g) ?? [];
    expect(refs.length).toBeGreaterThanOrEqual(6); // 4 in the Deployment, 1 in the Job, 1 in the CronJob
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

describe('purge CronJob', () => {
  interface PurgeValues {
    schedule: string;
    timeZone: string;
    retentionDays: number;
    concurrencyPolicy: string;
    startingDeadlineSeconds: number;
    successfulJobsHistoryLimit: number;
    failedJobsHistoryLimit: number;
    backoffLimit: number;
    activeDeadlineSeconds: number;
    resources: unknown;
  }
  const purgeValues = (): PurgeValues =>
    (parse(readFileSync(ALL_FEATURES_VALUES, 'utf8')) as { purge: PurgeValues }).purge;
  const purgeContainerOf = (objects: K8sObject[]): IContainer => containerOf(purgePodSpecOf(objects));
  const envOf = (container: IContainer, name: string) => container.env?.find((e) => e.name === name);
  const databaseUrlRef = (container: IContainer) => envOf(container, 'DATABASE_URL')?.valueFrom?.secretKeyRef;
  const purgeOnly = (): K8sObject[] => render({ set: ['purge.enabled=true'] });

  test('with default values there is no CronJob and no purge NetworkPolicy', () => {
    expect(defaults.filter((o) => o.kind === 'CronJob')).toEqual([]);
    expect(defaults.filter((o) => o.metadata.name.endsWith('-purge'))).toEqual([]);
  });

  test('purge.enabled alone renders a valid batch/v1 CronJob with the documented defaults', () => {
    const objects = purgeOnly();
    const cronJob = cronJobOf(objects);
    expect(only(objects, 'CronJob').apiVersion).toBe('batch/v1');
    expect(cronJob.spec).toMatchObject({ schedule: '17 3 * * *', concurrencyPolicy: 'Forbid' });
    expect(cronJob.spec).not.toHaveProperty('timeZone');
    expect(envOf(purgeContainerOf(objects), 'RETENTION_DAYS')?.value).toBe('90');
    const reports = validateManifests(objects);
    expect(reports.filter((r) => r.errors.length > 0)).toEqual([]);
    expect(reports.map((r) => r.kind)).toContain('batch/v1/CronJob');
    expect(strictFieldErrors(objects)).toEqual([]);
  });

  test('every purge value reaches the CronJob and its Job', () => {
    const values = purgeValues();
    const cronJob = cronJobOf(features);
    expect(cronJob.spec).toMatchObject({
      schedule: values.schedule,
      timeZone: values.timeZone,
      concurrencyPolicy: 'Forbid',
      startingDeadlineSeconds: values.startingDeadlineSeconds,
      successfulJobsHistoryLimit: values.successfulJobsHistoryLimit,
      failedJobsHistoryLimit: values.failedJobsHistoryLimit,
    });
    expect(cronJob.spec?.jobTemplate.spec).toMatchObject({
      backoffLimit: values.backoffLimit,
      activeDeadlineSeconds: values.activeDeadlineSeconds,
    });
    expect(purgeContainerOf(features).resources).toEqual(values.resources);
    // Not the chart's default, so the test sees the value and not a hard-coded 90.
    expect(values.retentionDays).not.toBe(90);
    expect(envOf(purgeContainerOf(features), 'RETENTION_DAYS')).toEqual({
      name: 'RETENTION_DAYS',
      value: String(values.retentionDays),
    });
  });

  test('the CronJob validates against the Kubernetes schema, and the validator does check CronJobs', () => {
    const cronJob = only(features, 'CronJob');
    expect(validateManifests([cronJob])).toEqual([
      { kind: 'batch/v1/CronJob', name: cronJob.metadata.name, errors: [] },
    ]);
    const broken = structuredClone(cronJob) as unknown as ICronJob;
    (broken.spec as unknown as Record<string, unknown>).concurrencyPolicy = 'Sometimes';
    const [report] = validateManifests([broken as unknown as K8sObject]);
    expect(report?.errors.join('\n')).toMatch(/concurrencyPolicy/);
    const misplaced = structuredClone(cronJob) as unknown as ICronJob;
    Object.assign(misplaced.spec?.jobTemplate.spec ?? {}, { restartPolicy: 'Never' }); // belongs in the pod spec
    expect(strictFieldErrors([misplaced as unknown as K8sObject])).toEqual([
      expect.stringMatching(/^CronJob\/.*restartPolicy/s),
    ]);
  });

  test('runs `node dist/cli/index.js purge` from the server image, once per run, without retrying a usage error', () => {
    for (const objects of [features, purgeOnly()]) {
      const container = purgeContainerOf(objects);
      expect(container.command).toEqual(['node', 'dist/cli/index.js', 'purge']);
      expect(container.args).toBeUndefined();
      expect(container.image).toBe(containerOf(podSpecOf(objects)).image);
      expect(container.imagePullPolicy).toBe(containerOf(podSpecOf(objects)).imagePullPolicy);
      const jobSpec = cronJobOf(objects).spec?.jobTemplate.spec;
      expect(jobSpec?.template.spec?.restartPolicy).toBe('Never');
      expect(jobSpec?.podFailurePolicy?.rules).toEqual([
        { action: 'FailJob', onExitCodes: { containerName: container.name, operator: 'In', values: [2] } },
      ]);
    }
  });

  test('its environment is RETENTION_DAYS, LOG_LEVEL and DATABASE_URL, the URL only from a Secret', () => {
    for (const objects of [features, purgeOnly()]) {
      const container = purgeContainerOf(objects);
      expect((container.env ?? []).map((e) => e.name).sort()).toEqual(['DATABASE_URL', 'LOG_LEVEL', 'RETENTION_DAYS']);
      expect(container.envFrom).toBeUndefined();
      expect(envOf(container, 'LOG_LEVEL')?.value).toBe(configOf(objects).LOG_LEVEL);
      const url = envOf(container, 'DATABASE_URL');
      expect(url?.value).toBeUndefined();
      expect(url?.valueFrom?.secretKeyRef?.key).toBe('DATABASE_URL');
    }
  });

  test('it reads DATABASE_URL from the Secret the Deployment uses: chart-made, the default name, or existingSecret', () => {
    const deploymentRef = (objects: K8sObject[]) => databaseUrlRef(containerOf(podSpecOf(objects)));
    // Chart-made: the ordinary Secret, not the migration hook's (which is deleted after the hooks).
    const chartMade = databaseUrlRef(purgeContainerOf(features));
    expect(chartMade).toEqual(deploymentRef(features));
    expect(chartMade?.name).toBe(only(features, 'Secret', '-notification-receiver').metadata.name);
    expect(chartMade?.name).not.toBe(only(features, 'Secret', '-migrations').metadata.name);
    // A Secret you manage, named like the release.
    expect(databaseUrlRef(purgeContainerOf(purgeOnly()))).toEqual(deploymentRef(purgeOnly()));
    // secrets.existingSecret.
    const existing = render({ set: ['purge.enabled=true', 'secrets.existingSecret=receiver-credentials'] });
    expect(databaseUrlRef(purgeContainerOf(existing))).toEqual({ name: 'receiver-credentials', key: 'DATABASE_URL' });
  });

  test('it is an ordinary resource, not a hook, and runs in the release namespace', () => {
    const cronJob = only(features, 'CronJob');
    expect(Object.keys(cronJob.metadata.annotations ?? {}).filter((k) => k.startsWith('helm.sh/hook'))).toEqual([]);
    expect((cronJob.metadata as { namespace?: string }).namespace).toBeUndefined(); // helm install -n decides
  });

  test('its pods carry component "purge": not selected by the server NetworkPolicy, Service or PDB', () => {
    const podLabels = cronJobOf(features).spec?.jobTemplate.spec?.template.metadata?.labels;
    expect(podLabels).toMatchObject({
      'app.kubernetes.io/component': 'purge',
      'app.kubernetes.io/instance': 'receiver',
    });
    expect(selects(serverPolicyOf(features).spec?.podSelector?.matchLabels, podLabels)).toBe(false);
    expect(selects(as<IService>(only(features, 'Service')).spec?.selector, podLabels)).toBe(false);
    expect(
      selects(as<IPodDisruptionBudget>(only(features, 'PodDisruptionBudget')).spec?.selector?.matchLabels, podLabels),
    ).toBe(false);
  });

  test('its own NetworkPolicy admits nothing in and lets it out only to DNS and Postgres', () => {
    const values = parse(readFileSync(ALL_FEATURES_VALUES, 'utf8')) as {
      networkPolicy: { egress: { dns: { to: unknown[] }; postgres: { to: unknown[] } } };
    };
    for (const objects of [features, purgeOnly()]) {
      const policy = as<INetworkPolicy>(only(objects, 'NetworkPolicy', '-purge'));
      const podLabels = cronJobOf(objects).spec?.jobTemplate.spec?.template.metadata?.labels;
      expect(selects(policy.spec?.podSelector?.matchLabels, podLabels)).toBe(true);
      expect(
        selects(policy.spec?.podSelector?.matchLabels, deploymentOf(objects).spec?.template.metadata?.labels),
      ).toBe(false);
      expect(policy.spec?.policyTypes).toEqual(['Ingress', 'Egress']);
      expect(policy.spec?.ingress ?? []).toEqual([]); // Ingress listed with no rule: nothing may connect
      const egress = policy.spec?.egress ?? [];
      expect(egress.map((r) => (r.ports ?? []).map((p) => `${p.port}/${p.protocol}`))).toEqual([
        ['53/UDP', '53/TCP'],
        ['5432/TCP'],
      ]);
      for (const rule of egress) expect(JSON.stringify(rule)).not.toMatch(/5672|5671|4317/); // no broker, no server extras
    }
    const egress = as<INetworkPolicy>(only(features, 'NetworkPolicy', '-purge')).spec?.egress ?? [];
    expect(egress.map((r) => r.to)).toEqual([
      values.networkPolicy.egress.dns.to,
      values.networkPolicy.egress.postgres.to,
    ]);
    // The server pods' policy is unchanged by it.
    expect(serverPolicyOf(features).spec?.egress).toEqual(
      serverPolicyOf(render({ ...allFeatures, set: ['purge.enabled=false'] })).spec?.egress,
    );
  });

  test('with the PrometheusRule, a failed or overdue purge alerts (kube-state-metrics series of this CronJob)', () => {
    interface Rule {
      alert?: string;
      expr?: string;
    }
    const purgeRules = (objects: K8sObject[]): Rule[] => {
      const rule = objects.find((o) => o.kind === 'PrometheusRule') as unknown as
        { spec: { groups: Array<{ name: string; rules: Rule[] }> } } | undefined;
      return rule?.spec.groups.filter((g) => g.name.endsWith('.purge')).flatMap((g) => g.rules) ?? [];
    };
    const cronJob = only(features, 'CronJob').metadata.name;
    const rules = purgeRules(features);
    expect(rules.map((r) => r.alert)).toEqual(['PaymentPurgeFailed', 'PaymentPurgeOverdue']);
    expect(rules[0]?.expr).toContain(`job_name=~"${cronJob}-[0-9]+"`);
    expect(rules[1]?.expr).toContain(`cronjob="${cronJob}"`);
    expect(rules[1]?.expr).toMatch(/> 172800$/);
    expect(purgeRules(render({ ...allFeatures, set: ['purge.enabled=false'] }))).toEqual([]);
  });

  test('with the PrometheusRule, a saturated recorder alerts per pod, as a share of the lanes the pod really runs', () => {
    const saturation = (set: string[]): string | undefined => {
      const rule = render({ ...allFeatures, set }).find((o) => o.kind === 'PrometheusRule') as unknown as {
        spec: { groups: Array<{ rules: Array<{ alert?: string; expr?: string }> }> };
      };
      return rule.spec.groups.flatMap((g) => g.rules).find((r) => r.alert === 'PaymentNotificationRecorderSaturated')
        ?.expr;
    };
    expect(saturation([])).toMatch(/^max by \(pod\) \(rate\(recorder_busy_seconds_total\{.*\}\[5m\]\)\) \/ 1 > 0\.9$/);
    expect(saturation(['config.databaseWriteLanes=3'])).toMatch(/ \/ 3 > 0\.9$/);
    // The service runs at most DATABASE_POOL_MAX - 1 lanes.
    expect(saturation(['config.databaseWriteLanes=3', 'config.databasePoolMax=3'])).toMatch(/ \/ 2 > 0\.9$/);
  });

  test('without the NetworkPolicy there is no purge policy either', () => {
    const objects = render({ set: ['purge.enabled=true', 'networkPolicy.enabled=false'] });
    expect(objects.map((o) => o.kind)).toContain('CronJob');
    expect(objects.map((o) => o.kind)).not.toContain('NetworkPolicy');
  });

  test('its name leaves the CronJob controller room for the Jobs it names (52 characters at most)', () => {
    const objects = render({ set: ['purge.enabled=true', `fullnameOverride=${'r'.repeat(60)}`] });
    const name = only(objects, 'CronJob').metadata.name;
    expect(name.length).toBeLessThanOrEqual(52);
    expect(name).toMatch(/^r+-purge$/);
    expect(only(objects, 'NetworkPolicy', '-purge').metadata.name).toBe(name);
  });

  test('the schema requires the retention and the schedule, and takes a time zone', () => {
    for (const set of [['purge.retentionDays=null'], ['purge.schedule=null']]) {
      const result = helmTemplate({ set: ['purge.enabled=true', ...set] });
      expect(result.status).not.toBe(0);
      expect(result.stderr).toMatch(/schema/i);
    }
    const zoned = render({
      set: ['purge.enabled=true', 'purge.timeZone=America/Argentina/Buenos_Aires', 'purge.schedule=@daily'],
    });
    expect(cronJobOf(zoned).spec).toMatchObject({ timeZone: 'America/Argentina/Buenos_Aires', schedule: '@daily' });
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
    const purgePodLabels = cronJobOf(features).spec?.jobTemplate.spec?.template.metadata?.labels;
    expect(selects(service.spec?.selector, purgePodLabels)).toBe(false);
  });

  test('the Ingress routes only POST /notifications (exact) to the public port, over TLS', () => {
    const ingress = as<IIngress>(only(features, 'Ingress'));
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
      const rules = policy.spec?.ingress ?? [];
      expect(rules.map((r) => r.ports?.map((p) => p.port))).toEqual([['http'], ['admin']]);
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
      for (const options of [{ valuesFiles: [emptyPeers] }, { set: ['networkPolicy.publicPeers=null'] }]) {
        const result = helmTemplate(options);
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

describe('values.schema.json', () => {
  const schemaFailures: [string, string[]][] = [
    ['an unknown top-level key', ['replicaCont=3']],
    ['an unknown nested key', ['config.logLevell=debug']],
    ['an unknown key in a list item', ['networkPolicy.publicPeers[0].podSelecter.app=x']],
    ['a string for an integer', ['replicaCount=two']],
    ['a string for a boolean', ['config.relayEnabled=maybe']],
    ['a value outside its enum', ['config.logLevel=verbose']],
    ['a purge retention of 0 days', ['purge.retentionDays=0']],
    ['a purge retention that is not a whole number', ['purge.retentionDays=7.5']],
    ['an unknown key under purge', ['purge.retentionDay=30']],
    ['a purge concurrency policy Kubernetes does not know', ['purge.concurrencyPolicy=Never']],
    ['a time zone prefix in the purge schedule (timeZone is the field for it)', ['purge.schedule=TZ=UTC 17 3 * * *']],
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
