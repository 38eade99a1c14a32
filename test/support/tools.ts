/**
 * The programs beyond Node, Postgres and RabbitMQ that the tools tier (`npm run test:tools`) runs, from
 * Debian's packages: nginx in front of the service (test/helm/ingressProxy.test.ts), promtool on the chart's
 * alerts (test/helm/alerts.test.ts), a Prometheus server scraping the app (test/helm/liveDashboard.test.ts) and
 * chromium, the real browser of the console's tests (test/browser/); buildah and mmdebstrap, which build the
 * image for the image tier (`npm run test:image`).
 */
import { accessSync, constants } from 'node:fs';
import path from 'node:path';

export type Tool = 'nginx' | 'promtool' | 'prometheus' | 'chromium' | 'buildah' | 'mmdebstrap';

/** The Debian package each comes in (.ci/run installs them). */
const PACKAGES: Readonly<Record<Tool, string>> = {
  nginx: 'nginx-light',
  promtool: 'prometheus',
  prometheus: 'prometheus',
  chromium: 'chromium',
  buildah: 'buildah',
  mmdebstrap: 'mmdebstrap',
};

/** Path to the program on PATH, or in /usr/sbin or /usr/bin where Debian puts it; null when it is not there. */
export function findTool(name: Tool): string | null {
  const directories = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin', '/usr/bin'];
  for (const directory of directories.filter(Boolean)) {
    const candidate = path.join(directory, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return null;
}

/** One line saying which of `tools` are missing and how to install them; null when all are there. */
export function missingToolsProblem(tools: readonly Tool[]): string | null {
  const missing = tools.filter((tool) => findTool(tool) === null);
  if (missing.length === 0) return null;
  const packages = [...new Set(missing.map((tool) => PACKAGES[tool]))].join(' ');
  return `${missing.join(', ')} not found: apt-get install ${packages} (Debian's packages; .ci/run installs them)`;
}

/** Path to the program; throws the one-line problem when it is missing. */
export function toolPath(name: Tool): string {
  const found = findTool(name);
  if (found === null) throw new Error(missingToolsProblem([name]) ?? `${name} not found`);
  return found;
}
