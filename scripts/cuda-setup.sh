#!/usr/bin/env bash
# cuda-setup.sh --toolkit: installs the CUDA compiler a developer needs to regenerate the
# kernels' PTX. Nobody else needs this script: building, testing and running flashgorgon, on
# the GPU included, needs no cgo, no CUDA headers and no build tag (the driver is opened at run
# time; see cuda/README.md).
#
# It installs Debian's non-free nvidia-cuda-toolkit (nvcc 11.8, whose PTX drivers from 11.8 on
# load; needs root, about 1.5 min), after which
#
#   go generate ./cuda/...
#
# runs nvcc on cuda/kernels/*.cu and rewrites the committed cuda/ptx/*.ptx. It does nothing when
# nvcc is already on PATH.
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
    --env) echo "cuda-setup.sh: --env is gone: builds need no CUDA headers or cgo flags any more" >&2; exit 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "cuda-setup.sh: unknown argument $a (want --toolkit)" >&2; exit 2 ;;
  esac
done
if [ "$toolkit" != 1 ]; then
  sed -n '2,16p' "$0" >&2
  exit 2
fi

if ! command -v nvcc >/dev/null; then
  if [ -z "$mirror" ] || [ -z "$suite" ]; then
    echo "cuda-setup.sh: found no Debian archive in the apt sources (mirror '$mirror', release '$suite'); set DEBIAN_MIRROR and DEBIAN_SUITE" >&2
    exit 1
  fi
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

echo "cuda-setup.sh: $(nvcc --version | tail -1); regenerate the PTX with: go generate ./cuda/..." >&2
