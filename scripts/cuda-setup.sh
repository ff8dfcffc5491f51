#!/usr/bin/env bash
# cuda-setup.sh: makes a gpu build of flashgorgon possible on a machine without a CUDA install.
#
# A gpu build (go build -tags gpu) compiles the cgo code of ./cuda, which includes <cuda.h>
# (CUDA driver API types and constants). That header, and the libcuda.so link stub for programs
# that link the driver directly, come from Debian's non-free package nvidia-cuda-dev (CUDA 11.8).
# This script downloads that one package with a private apt configuration (the system's
# sources are left untouched), unpacks the headers and the stub into .cache/cuda in the
# repository root, and writes .cache/cuda/env.sh with the cgo flags:
#
#   scripts/cuda-setup.sh && . .cache/cuda/env.sh && go build -tags gpu ./... && go vet -tags gpu ./...
#   eval "$(scripts/cuda-setup.sh --env)"   # the same: the exports are the only thing on stdout
#
# It is idempotent: a second run finds the files and only rewrites env.sh. Nothing here needs a
# GPU or root (apt-get download and dpkg-deb run as any user).
#
# With --toolkit it also installs Debian's nvidia-cuda-toolkit (nvcc 11.8, needs root), which
# only a developer who changes the kernels needs: `go generate ./cuda/...` runs nvcc and writes
# the PTX that is committed and embedded in the binary.
#
# Environment: DEBIAN_MIRROR and DEBIAN_SUITE override the Debian archive and release, which
# default to the ones in this machine's apt sources and /etc/os-release.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="$top/.cache/cuda"
# The Debian archive and release this machine already uses, read from its own apt sources
# (deb822 .sources stanzas or one-line .list entries), so the script names no host itself.
system_mirror() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk '/^URIs:/ {u=$2} /^Suites:/ {for (i = 2; i <= NF; i++) if ($i !~ /-/) s=$i}
         /^[[:space:]]*$/ {if (u != "" && s != "") {print u; exit}; u=""; s=""}
         END {if (u != "" && s != "") print u}' "$f"
  done
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    sed -E 's/\[[^]]*\]//' | awk '$1 == "deb" && $3 !~ /-/ {print $2}' || true
}
system_suite() { (. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}"); }
mirror=${DEBIAN_MIRROR:-$(system_mirror | head -n 1 || true)}
suite=${DEBIAN_SUITE:-$(system_suite)}
toolkit=0
for a in "$@"; do
  case "$a" in
    --toolkit) toolkit=1 ;;
    --env) ;; # stdout carries only the exports in every mode
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "cuda-setup.sh: unknown argument $a (want --env, --toolkit or nothing)" >&2; exit 2 ;;
  esac
done

inc="$cache/usr/include"
stub="$cache/usr/lib/x86_64-linux-gnu/stubs"

# A private apt configuration: our own sources list (main and non-free), our own package lists
# and archive cache under .cache/cuda/apt, so the system's apt state is never changed.
apt_opts=()
apt_prepare() {
  local a="$cache/apt"
  mkdir -p "$a/lists/partial" "$a/archives/partial"
  echo "deb $mirror $suite main non-free" >"$a/sources.list"
  apt_opts=(-o "Dir::Etc::SourceList=$a/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$a/lists" -o "Dir::Cache=$a" -o "Dir::Cache::archives=$a/archives"
    -o "APT::Sandbox::User=$(id -un)" -o "Debug::NoLocking=1")
  apt-get "${apt_opts[@]}" -qq update
}

if [ ! -f "$inc/cuda.h" ] || [ ! -f "$stub/libcuda.so" ]; then
  command -v apt-get >/dev/null || { echo "cuda-setup.sh: needs apt-get and dpkg-deb (Debian or Ubuntu)" >&2; exit 1; }
  if [ -z "$mirror" ] || [ -z "$suite" ]; then
    echo "cuda-setup.sh: found no Debian archive in the apt sources (mirror '$mirror', release '$suite'); set DEBIAN_MIRROR and DEBIAN_SUITE" >&2
    exit 1
  fi
  echo "cuda-setup.sh: fetching nvidia-cuda-dev from $mirror $suite non-free" >&2
  apt_prepare
  dl="$cache/dl"
  rm -rf "$dl" && mkdir -p "$dl"
  (cd "$dl" && apt-get "${apt_opts[@]}" -qq download nvidia-cuda-dev)
  deb=$(ls "$dl"/nvidia-cuda-dev_*.deb)
  # Only the headers and the driver stub: the rest of the package (about 3 GB unpacked) is
  # libraries this project does not link.
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$cache" ./usr/include ./usr/lib/x86_64-linux-gnu/stubs
  dpkg-deb -f "$deb" Version >"$cache/VERSION"
  rm -rf "$dl"
fi

cat >"$cache/env.sh" <<ENV
# Written by scripts/cuda-setup.sh: cgo flags for a gpu build (nvidia-cuda-dev $(cat "$cache/VERSION" 2>/dev/null)).
export CGO_ENABLED=1
export CGO_CFLAGS="-I$inc"
export CGO_LDFLAGS="-L$stub"
ENV

if [ "$toolkit" = 1 ] && ! command -v nvcc >/dev/null; then
  [ "$(id -u)" = 0 ] || { echo "cuda-setup.sh: --toolkit installs nvidia-cuda-toolkit and needs root" >&2; exit 1; }
  # The toolkit's dependencies must match the packages already installed, which may come from
  # the release's -updates and -security suites: so this install reads the system's own
  # sources plus the contrib and non-free components of the same archive (one private
  # deb822 file with the system's keyring), with private package lists.
  tk="$cache/apt-toolkit"
  mkdir -p "$tk/parts" "$tk/lists/partial"
  rm -f "$tk"/parts/*
  for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] && cp "$f" "$tk/parts/"
  done
  [ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$tk/parts/system.list"
  keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  {
    echo "Types: deb"; echo "URIs: $mirror"; echo "Suites: $suite $suite-updates"
    echo "Components: contrib non-free"
    [ -f "$keyring" ] && echo "Signed-By: $keyring"
  } >"$tk/parts/flashgorgon-nonfree.sources"
  tk_opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$tk/parts" -o "Dir::State::Lists=$tk/lists")
  apt-get "${tk_opts[@]}" -qq update
  DEBIAN_FRONTEND=noninteractive apt-get "${tk_opts[@]}" -qq install -y --no-install-recommends nvidia-cuda-toolkit >&2
fi

echo "cuda-setup.sh: headers in $inc; to build: . $cache/env.sh && go build -tags gpu ./..." >&2
cat "$cache/env.sh"
