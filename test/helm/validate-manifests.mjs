// Validates Kubernetes objects (a JSON array on stdin) against the Kubernetes and Prometheus
// operator schemas shipped by kubernetes-models and @kubernetes-models/prometheus-operator.
// Those packages are ES modules only, so test/helm/helm.ts runs this with plain node instead
// of loading them into Jest. Prints [{kind, name, errors}] as JSON; an apiVersion/kind neither
// package knows is reported as an error, not skipped.

/** Module path exporting the model classes of an apiVersion. */
function modulePathFor(apiVersion) {
  if (apiVersion.startsWith('monitoring.coreos.com/')) {
    return `@kubernetes-models/prometheus-operator/${apiVersion}`;
  }
  return `kubernetes-models/${apiVersion}`; // "v1" (core) or "group/version"
}

async function modelFor(apiVersion, kind) {
  let module;
  try {
    module = await import(modulePathFor(apiVersion));
  } catch {
    return undefined;
  }
  const model = module[kind];
  return typeof model === 'function' && model.apiVersion === apiVersion && model.kind === kind ? model : undefined;
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

const objects = JSON.parse(await readStdin());
const reports = [];
for (const object of objects) {
  const report = { kind: `${object.apiVersion}/${object.kind}`, name: object.metadata?.name ?? '?', errors: [] };
  const Model = await modelFor(object.apiVersion, object.kind);
  if (!Model) {
    report.errors.push(`unknown apiVersion/kind ${object.apiVersion} ${object.kind}`);
  } else {
    try {
      new Model(object).validate();
    } catch (error) {
      report.errors.push(error instanceof Error ? error.message : String(error));
    }
  }
  reports.push(report);
}
process.stdout.write(JSON.stringify(reports));
