/**
 * The container image, without a Docker engine: the Dockerfile's shape, and its runtime
 * stage reproduced in a clean folder (the build context files it copies, production
 * dependencies installed with the prod-deps stage's own command, the compiled dist/), then
 * started with the image's exact CMD and probed with the image's HEALTHCHECK command.
 */
import { spawnSync } from 'node:child_process';
import { createHash, type Hash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { freePort, start, stop, waitForStatus, type RunningApp } from './app';
import { testDatabase, type TestDatabase } from '../support/database';
import { copyArgs, dockerignored, execForm, readDockerfile, type Instruction, type Stage } from './dockerfile';
import { ROOT } from '../support/build';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IJob } from 'kubernetes-models/batch/v1/Job';
import { as, firstContainer, notesExecCommands, objects } from './chartApp';
import { only } from './helm';

/** The npm inside the runtime's base image (node:22 ships npm 10). */
const IMAGE_NPM = 'npm@10';

const stages = readDockerfile();
const runtime = stages[stages.length - 1] as Stage;
const all = (stage: Stage, keyword: string): Instruction[] => stage.instructions.filter((i) => i.keyword === keyword);
const last = (stage: Stage, keyword: string): Instruction | undefined => all(stage, keyword).at(-1);
const stageNamed = (name: string): Stage => {
  const stage = stages.find((s) => s.name === name);
  if (!stage) throw new Error(`no stage named ${name}`);
  return stage;
};
const workdirOf = (stage: Stage): string => last(stage, 'WORKDIR')?.rest ?? '/';

/** Where reproduced stages are kept between runs (node_modules/.cache: npm ci starts afresh). */
const STAGE_CACHE = path.join(ROOT, 'node_modules', '.cache', 'image-stages');

/** A file's or folder's content, for the stage key. */
function hashContent(hash: Hash, target: string): void {
  if (!statSync(target).isDirectory()) {
    hash.update(readFileSync(target));
    return;
  }
  for (const entry of readdirSync(target).sort()) {
    hash.update(`\0${entry}\0`);
    hashContent(hash, path.join(target, entry));
  }
}

/** What a reproduced stage depends on: the npm it runs, its instructions and the content of what it copies. */
function stageKey(stage: Stage): string {
  const hash = createHash('sha256').update(IMAGE_NPM);
  for (const instruction of stage.instructions) {
    hash.update(`\0${instruction.keyword} ${JSON.stringify(instruction.flags)} ${instruction.rest}`);
    if (instruction.keyword === 'COPY' && instruction.flags.from === undefined)
      for (const source of copyArgs(instruction.rest).sources) hashContent(hash, path.join(ROOT, source));
  }
  return hash.digest('hex').slice(0, 16);
}

describe('Dockerfile', () => {
  test('is multi-stage: a build stage, then a runtime on the same slim Node base, a supported LTS', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(runtime.image).toMatch(/^node:(22|24)[\w.-]*-slim@sha256:[0-9a-f]{64}$/);
    expect(stages.some((s) => all(s, 'RUN').some((r) => /npm run build/.test(r.rest)))).toBe(true);
    // package.json's engines admits it (and this machine's Node 20, which the code and tests keep working on).
    const { engines } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      engines: { node: string };
    };
    expect(engines.node).toBe('>=20');
  });

  test('the runtime stage installs nothing itself and gets only production dependencies', () => {
    // Its one RUN removes the base image's package managers.
    expect(all(runtime, 'RUN').map((r) => r.rest)).toEqual([
      expect.stringMatching(/^rm -rf \/usr\/local\/lib\/node_modules\/npm /),
    ]);
    const nodeModules = all(runtime, 'COPY').find((c) =>
      copyArgs(c.rest).sources.some((s) => s.endsWith('node_modules')),
    );
    const from = nodeModules?.flags.from;
    expect(from).toBeDefined();
    const installs = all(stageNamed(from ?? ''), 'RUN').map((r) => r.rest);
    expect(installs).toEqual([expect.stringMatching(/^npm ci\b.* --omit=dev\b/)]);
  });

  test('no stage runs an install script: every npm ci is --ignore-scripts (issue 45)', () => {
    const installs = stages.flatMap((stage) => all(stage, 'RUN').filter((r) => /\bnpm ci\b/.test(r.rest)));
    expect(installs.length).toBeGreaterThanOrEqual(2);
    for (const install of installs) expect(install.rest).toMatch(/\bnpm ci\b.* --ignore-scripts\b/);
  });

  test("the Node base is an exact version pinned by digest, the one scripts/image.sh pins for its stand-in with the tarball's integrity and for Docker and Podman by the same digest", () => {
    const script = readFileSync(path.join(ROOT, 'scripts', 'image.sh'), 'utf8');
    const version = /^NODE_VERSION=(\d+\.\d+\.\d+)$/m.exec(script)?.[1];
    const digest = /^NODE_IMAGE_DIGEST=(sha256:[0-9a-f]{64})$/m.exec(script)?.[1];
    expect(version).toMatch(/^22\.\d+\.\d+$/);
    expect(digest).toBeDefined();
    expect(/^NODE_INTEGRITY=sha512-[A-Za-z0-9+/]{86}==$/m.test(script)).toBe(true);
    expect(/^NPM_INTEGRITY=sha512-[A-Za-z0-9+/]{86}==$/m.test(script)).toBe(true);
    expect(/^ROOTFS_SHA256=[0-9a-f]{64}$/m.test(script)).toBe(true);
    expect(/^ROOTFS_EPOCH=\d+$/m.test(script)).toBe(true);
    for (const stage of stages)
      expect([stage.name, stage.image]).toEqual([stage.name, `node:${version ?? ''}-bookworm-slim@${digest ?? ''}`]);
  });

  test('every step that runs in a build stage, and every one after a stage first copies the project in, runs as an unprivileged user', () => {
    for (const stage of stages) {
      let user = 'root';
      let copied = false;
      for (const instruction of stage.instructions) {
        if (instruction.keyword === 'USER') user = instruction.rest.split(':')[0] ?? '';
        if (instruction.keyword === 'COPY') copied = true;
        if (instruction.keyword !== 'RUN') continue;
        const unprivileged = user !== 'root' && user !== '0' && user !== '';
        if (copied || /(^|&&|;)\s*(npm|npx|node)\s/.test(instruction.rest))
          expect([stage.name, instruction.rest, unprivileged]).toEqual([stage.name, instruction.rest, true]);
      }
    }
    // What the build stages copy in is their user's: the folder buildah makes for the first COPY is too.
    for (const stage of stages.filter((st) => st !== runtime))
      for (const copy of all(stage, 'COPY'))
        expect([stage.name, copy.rest, copy.flags.chown]).toEqual([stage.name, copy.rest, 'node:node']);
    // Only the runtime stage runs anything as root: it removes the base's package managers, before any COPY.
    expect(
      stages.flatMap((stage) => {
        const named = stage.instructions.findIndex((i) => i.keyword === 'USER');
        const firstUser = named === -1 ? stage.instructions.length : named;
        return stage.instructions
          .slice(0, firstUser)
          .filter((i) => i.keyword === 'RUN')
          .map(() => stage.name);
      }),
    ).toEqual(['runtime']);
  });

  test("the runtime stage's files are root's, whoever wrote them in the stages before: the application cannot change its code", () => {
    const fromStages = all(runtime, 'COPY').filter((c) => c.flags.from !== undefined);
    expect(fromStages.length).toBeGreaterThanOrEqual(2);
    for (const copy of fromStages) expect([copy.rest, copy.flags.chown]).toEqual([copy.rest, '0:0']);
    // The working directory is made before the user is named (as root's: WORKDIR makes it as USER).
    const keywords = runtime.instructions.map((i) => i.keyword);
    expect(keywords.indexOf('WORKDIR')).toBeLessThan(keywords.indexOf('USER'));
  });

  test('npm ci takes the packages from its cache first, a cache the build can be given (its builds with no network)', () => {
    const installs = stages.filter((stage) => all(stage, 'RUN').some((r) => /\bnpm ci\b/.test(r.rest)));
    expect(installs.length).toBeGreaterThanOrEqual(2);
    for (const stage of installs) {
      for (const install of all(stage, 'RUN').filter((r) => /\bnpm ci\b/.test(r.rest)))
        expect(install.rest).toMatch(/\bnpm ci\b.* --prefer-offline\b/);
      expect(all(stage, 'ARG').map((a) => a.rest)).toContain('npm_config_cache=/home/node/.npm');
    }
    const script = readFileSync(path.join(ROOT, 'scripts', 'image.sh'), 'utf8');
    expect(script).toMatch(/unshare --net -- buildah bud\b/);
    expect(script).toMatch(/podman build --network none\b/);
    expect(script).toContain('--build-arg npm_config_cache=/mnt');
  });

  test('the chart deploys the version the package builds', () => {
    const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const chart = parse(readFileSync(path.join(ROOT, 'helm', 'notification-receiver', 'Chart.yaml'), 'utf8')) as {
      appVersion: string;
    };
    expect(chart.appVersion).toBe(version);
  });

  test('npm start runs node with the same V8 flag as the image, exec-ed so that SIGTERM reaches it', () => {
    const { scripts } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(scripts.start).toBe('tsc -b tsconfig.build.json && exec node --no-allocation-site-pretenuring dist/main.js');
  });

  test('runs as a numeric non-root user', () => {
    const user = last(runtime, 'USER')?.rest ?? '';
    expect(user).toMatch(/^\d+(:\d+)?$/);
    expect(Number(user.split(':')[0])).toBeGreaterThan(0);
  });

  test('starts node directly (exec form), so SIGTERM reaches it', () => {
    expect(execForm(last(runtime, 'CMD')?.rest ?? '')).toEqual([
      'node',
      '--no-allocation-site-pretenuring',
      'dist/main.js',
    ]);
    expect(all(runtime, 'ENTRYPOINT')).toEqual([]);
    expect(all(runtime, 'STOPSIGNAL')).toEqual([]);
  });

  test('exposes the public and the admin port', () => {
    const ports = all(runtime, 'EXPOSE').flatMap((e) => e.rest.split(/\s+/));
    expect(ports.sort()).toEqual(['8080', '9090']);
  });

  test('has an exec-form HEALTHCHECK that runs node against /livez on the admin port', () => {
    const check = last(runtime, 'HEALTHCHECK')?.rest ?? '';
    const command = execForm(check.replace(/^CMD\s+/, ''));
    expect(command?.[0]).toBe('node');
    expect(command?.join(' ')).toMatch(/127\.0\.0\.1.*ADMIN_PORT.*9090.*\/livez/);
  });

  test('every COPY from the build context exists and is not left out by .dockerignore', () => {
    const sources = stages
      .flatMap((s) => all(s, 'COPY').filter((c) => c.flags.from === undefined))
      .flatMap((c) => copyArgs(c.rest).sources);
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) {
      expect([source, existsSync(path.join(ROOT, source))]).toEqual([source, true]);
      expect([source, dockerignored(source)]).toEqual([source, false]);
    }
    for (const local of ['node_modules', 'dist', 'dist-bench', '.env', '.git', 'test/helm/chart.test.ts']) {
      expect([local, dockerignored(local)]).toEqual([local, true]);
    }
  });

  describe("the runtime stage's command, from a clean production install", () => {
    let root: string;
    let app: RunningApp | undefined;
    let adminPort: number;
    let database: TestDatabase;
    let env: Record<string, string>;

    /**
     * Stage `from`'s files at `source` (an absolute path inside that stage). The build stage is this checkout
     * after `npm run build`; any other stage is reproduced (its context COPYs, then its RUN commands) once per
     * content of what it copies and runs, and kept in node_modules/.cache as Docker keeps a layer.
     */
    function fromStage(from: string, source: string): string {
      const stage = stageNamed(from);
      const relative = path.posix.relative(workdirOf(stage), source);
      if (all(stage, 'RUN').some((r) => /npm run build/.test(r.rest))) return path.join(ROOT, relative);
      const dir = path.join(STAGE_CACHE, `${from}-${stageKey(stage)}`);
      if (!existsSync(dir)) {
        const partial = `${dir}.${process.pid}.partial`;
        rmSync(partial, { recursive: true, force: true });
        mkdirSync(partial, { recursive: true });
        for (const instruction of stage.instructions) {
          if (instruction.keyword === 'COPY') {
            if (instruction.flags.from !== undefined) throw new Error('nested stage copies are not reproduced');
            for (const s of copyArgs(instruction.rest).sources)
              cpSync(path.join(ROOT, s), path.join(partial, path.basename(s)), { recursive: true });
          } else if (instruction.keyword === 'RUN') {
            // Run npm as the base image ships it (node:22 comes with npm 10), not this
            // machine's npm: npm 11 `npm ci` rejects a lock file that lacks other platforms'
            // optional binaries (npm/cli#4828), which npm 10 and the image build accept.
            const command = instruction.rest.replace(/^npm /, `npx --yes ${IMAGE_NPM} `);
            const result = spawnSync('sh', ['-c', command], {
              cwd: partial,
              encoding: 'utf8',
              env: { ...process.env, npm_config_prefer_offline: 'true', npm_config_update_notifier: 'false' },
            });
            if (result.status !== 0) throw new Error(`${instruction.rest} failed:\n${result.stdout}\n${result.stderr}`);
          }
        }
        renameSync(partial, dir);
      }
      return path.join(dir, relative);
    }

    beforeAll(async () => {
      // root stands for the runtime stage's WORKDIR: every COPY there has a relative destination.
      root = mkdtempSync(path.join(tmpdir(), 'image-app-'));
      for (const copy of all(runtime, 'COPY')) {
        const { sources, dest } = copyArgs(copy.rest);
        if (path.isAbsolute(dest)) throw new Error(`runtime COPY to an absolute path: ${copy.rest}`);
        for (const source of sources) {
          const from = copy.flags.from === undefined ? path.join(ROOT, source) : fromStage(copy.flags.from, source);
          const target = dest.endsWith('/') ? path.join(root, dest, path.basename(source)) : path.join(root, dest);
          cpSync(from, target, { recursive: true });
        }
      }
      const imageEnv = Object.fromEntries(
        all(runtime, 'ENV').map((e) => {
          const [, key = '', value = ''] = /^(\w+)=(.*)$/.exec(e.rest) ?? [];
          return [key, value];
        }),
      );
      adminPort = await freePort();
      database = testDatabase('helm_image_check');
      env = {
        ...imageEnv,
        HOST: '127.0.0.1',
        PORT: String(await freePort()),
        ADMIN_PORT: String(adminPort),
        DATABASE_URL: database.url,
        SECOND_KEYS: '145227:dummy-second-key-for-the-image',
        ALLOWED_SOURCE_IPS: 'any',
        RELAY_ENABLED: 'false',
        SHUTDOWN_TIMEOUT: '5s',
      };
    }, 90_000);

    afterAll(async () => {
      if (app) await stop(app);
      if (database) await database.drop();
      if (root) rmSync(root, { recursive: true, force: true });
    });

    test('When the chart names a script, a user or a port, then the runtime stage has it', () => {
      const deployment = as<IDeployment>(only(objects, 'Deployment')).spec?.template.spec;
      const job = as<IJob>(only(objects, 'Job')).spec?.template.spec;
      const server = firstContainer(deployment?.containers);
      const commands = [server.command, firstContainer(job?.containers).command, ...notesExecCommands()];
      for (const command of commands) {
        expect(command?.[0]).toBe('node');
        for (const script of (command ?? []).slice(1).filter((arg) => /\.[cm]?js$/.test(arg)))
          expect([script, existsSync(path.join(root, script))]).toEqual([script, true]);
      }
      const user = last(runtime, 'USER')?.rest;
      for (const pod of [deployment, job])
        expect(`${pod?.securityContext?.runAsUser}:${pod?.securityContext?.runAsGroup}`).toBe(user);
      const exposed = all(runtime, 'EXPOSE').flatMap((e) => e.rest.split(/\s+/));
      expect((server.ports ?? []).map((p) => String(p.containerPort)).sort()).toEqual(exposed.sort());
    });

    test('has no dev dependency installed', () => {
      const { devDependencies } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
        devDependencies: Record<string, string>;
      };
      for (const name of ['typescript', 'jest', 'kubernetes-models']) {
        expect(Object.keys(devDependencies)).toContain(name);
        expect([name, existsSync(path.join(root, 'node_modules', name))]).toEqual([name, false]);
      }
      expect(existsSync(path.join(root, 'sql'))).toBe(true);
    });

    test('CMD starts the service, /livez answers 200, and the HEALTHCHECK command passes', async () => {
      const command = execForm(last(runtime, 'CMD')?.rest ?? '') ?? [];
      app = start(command, root, env);
      await waitForStatus(app, `http://127.0.0.1:${adminPort}/livez`, 200, 30_000);
      await waitForStatus(app, `http://127.0.0.1:${adminPort}/readyz`, 200, 30_000);
      const healthcheck = execForm((last(runtime, 'HEALTHCHECK')?.rest ?? '').replace(/^CMD\s+/, '')) ?? [];
      const [, ...args] = healthcheck;
      const result = spawnSync(process.execPath, args, {
        env: { ADMIN_PORT: String(adminPort) },
        encoding: 'utf8',
        timeout: 10_000,
      });
      expect(result.status).toBe(0);
    }, 60_000);

    test('SIGTERM makes it exit cleanly within SHUTDOWN_TIMEOUT', async () => {
      if (!app) throw new Error('not started');
      const started = Date.now();
      const code = await stop(app);
      expect({ code, output: code === 0 ? '' : app.output() }).toEqual({ code: 0, output: '' });
      expect(Date.now() - started).toBeLessThan(5_000 + 1_000);
      app = undefined;
    }, 20_000);
  });
});
