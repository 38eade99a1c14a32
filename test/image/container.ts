/**
 * The built image, run without a container runtime (crun cannot start containers on the development
 * machines): buildah mounts the image's root, and each command runs in a mount namespace of its own where that
 * root is bound read-only with a fresh tmpfs on /tmp (the chart's readOnlyRootFilesystem and its one emptyDir),
 * chrooted into it, in the image's working directory, as the chart's UID and GID, with no capabilities and
 * no_new_privs (allowPrivilegeEscalation: false). The network is the host's, so Postgres and RabbitMQ on
 * loopback are reached; the chart's ports are therefore mapped to free ones, as `docker run -p` would.
 */
import { spawnSync } from 'node:child_process';
import { start, type RunningApp } from '../helm/app';
import { ROOT } from '../support/build';

/** What `npm run test:image` builds (test/image/imageSetup.ts) and the tests run. */
export const IMAGE = 'localhost/notification-receiver:test';

/** The Dockerfile's stages before the runtime, built on their own (`--target`) to look inside them. */
export const STAGE_IMAGES = {
  build: 'localhost/notification-receiver:test-stage-build',
  'prod-deps': 'localhost/notification-receiver:test-stage-prod-deps',
} as const;

/** The image's config, as `buildah inspect` gives it (Docker format: it keeps the HEALTHCHECK). */
export interface ImageConfig {
  User: string;
  Env: string[];
  WorkingDir: string;
  Cmd: string[] | null;
  Entrypoint: string[] | null;
  ExposedPorts: Record<string, object> | null;
  Labels: Record<string, string> | null;
  Healthcheck?: { Test: string[] };
}

/** Runs buildah; throws with its output when it fails. */
export function buildah(args: string[]): string {
  const result = spawnSync('buildah', args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.error) throw result.error;
  if (result.status !== 0) throw new Error(`buildah ${args.join(' ')} failed (${result.status}):\n${result.stderr}`);
  return result.stdout;
}

export function imageConfig(image = IMAGE): ImageConfig {
  const inspected = JSON.parse(buildah(['inspect', '--type', 'image', image])) as { Docker: { config: ImageConfig } };
  return inspected.Docker.config;
}

/** The image's environment as a record (what every process in it starts with). */
export function imageEnv(config: ImageConfig): Record<string, string> {
  return Object.fromEntries(
    config.Env.map((entry) => {
      const at = entry.indexOf('=');
      return [entry.slice(0, at), entry.slice(at + 1)];
    }),
  );
}

export interface MountedImage {
  /** The image's root on this machine (read it; never write to it). */
  root: string;
  release: () => void;
}

/** A working container of the image, its root mounted; `release` unmounts and removes it. */
export function mountImage(image = IMAGE): MountedImage {
  const container = buildah(['from', '--pull-never', image]).trim();
  try {
    const root = buildah(['mount', container]).trim();
    return {
      root,
      release: () => {
        buildah(['umount', container]);
        buildah(['rm', container]);
      },
    };
  } catch (error) {
    buildah(['rm', container]);
    throw error;
  }
}

/**
 * Mount namespace set-up, run by bash on this machine (never inside the image): the image's root bound
 * read-only over itself (in this namespace only: buildah's mount stays as it was), a 64 MiB tmpfs on each
 * writable path (the chart's emptyDirs and their sizeLimit), /proc and the host's /dev; then chroot
 * (unshare --root) into it with the working directory, the GID (no supplementary groups) and the UID. The
 * bounding set keeps only what that last step needs, and a non-root UID holds none of them.
 */
const ENTER = `set -eu
root=$1 workdir=$2 uid=$3 gid=$4 writable=$5; shift 5
mount --bind "$root" "$root"
mount -o remount,bind,ro "$root"
IFS=: read -ra paths <<<"$writable"
for p in "\${paths[@]}"; do mount -t tmpfs -o size=64m,mode=1777,nosuid,nodev tmpfs "$root$p"; done
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
mount --rbind /dev "$root/dev"
exec setpriv --no-new-privs --inh-caps=-all --bounding-set=-all,+sys_chroot,+setuid,+setgid \\
  unshare --root="$root" --wd="$workdir" --setgid "$gid" --setuid "$uid" -- "$@"`;

export interface RunAs {
  uid: number;
  gid: number;
}

/** Where and how a command runs in the image: as whom, with what environment, and what it may write. */
export interface Placement {
  image: MountedImage;
  config: ImageConfig;
  user: RunAs;
  /** Exactly the process's environment (PATH and HOME among them). */
  env: Record<string, string>;
  /** The only paths it may write (each a fresh tmpfs). */
  writable: readonly string[];
}

/**
 * Starts `command` in the mounted image, in its working directory. The process is the command itself (exec all
 * the way down), so a signal sent to it reaches node as the kubelet's reaches the container's process.
 */
export function startInImage({ image, config, user, env, writable }: Placement, command: string[]): RunningApp {
  const where = [image.root, config.WorkingDir || '/', String(user.uid), String(user.gid), writable.join(':')];
  return start(
    ['unshare', '--mount', '--propagation', 'private', 'bash', '-c', ENTER, 'enter', ...where, ...command],
    ROOT,
    env,
  );
}

/** Runs a command in the image to its end (killed after 60 s, so it never outlives the test). */
export async function runInImage(
  placement: Placement,
  command: string[],
): Promise<{ code: number | string; output: string }> {
  const run = startInImage(placement, command);
  const killer = setTimeout(() => run.child.kill('SIGKILL'), 60_000);
  const code = await run.exited;
  clearTimeout(killer);
  return { code, output: run.output() };
}
