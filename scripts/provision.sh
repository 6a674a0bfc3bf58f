#!/usr/bin/env bash
# Provision Kolesky's dependencies: Debian packages, then Kokkos + Kokkos Kernels 3.4.01
# from Debian's trilinos 13.2.0-4 source package, patched and installed into cached prefixes.
#
#   scripts/provision.sh [openmp|cuda]...      (default: openmp)
#
# Prefixes live in $KOLESKY_DEPS (default: <repo>/.deps); each is rebuilt only when its inputs
# (this script, the patches, the configuration) change. A warm rerun takes about a second.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deps=${KOLESKY_DEPS:-$here/.deps}
configs=("$@"); [ ${#configs[@]} -gt 0 ] || configs=(openmp)
jobs=${KOLESKY_JOBS:-$(nproc)}
trilinos_version=13.2.0-4
log() { printf '[provision] %s\n' "$*" >&2; }

sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# 1. Debian packages (only what is missing).
pkgs=(g++ cmake make patch xz-utils dpkg-dev libopenblas-dev libopenblas-openmp-dev liblapack-dev libgtest-dev libbenchmark-dev zlib1g-dev
      python3-matplotlib libcli11-dev libglpk-dev glpk-utils clang libfuzzer-14-dev
      libopenmpi-dev openmpi-bin libscalapack-openmpi-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  sudo_if_needed apt-get update -qq
  sudo_if_needed apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. The trilinos source package, through a private deb-src list derived from the system's own
#    apt configuration (the system's configuration is not touched).
src=$deps/src
fetch_trilinos() {
  local apt=$deps/apt
  mkdir -p "$apt/lists/partial" "$apt/sources.list.d" "$deps/download"
  local sys=/etc/apt/sources.list.d/debian.sources
  [ -f "$sys" ] || { log "no $sys: cannot derive a deb-src entry"; exit 1; }
  # Keep the first stanza's URIs/Suites/Components/Signed-By, change Types to deb-src.
  awk 'BEGIN{RS=""; ORS="\n\n"} NR==1 { gsub(/Types:[^\n]*/, "Types: deb-src"); print }' "$sys" \
    | grep -v '^#' > "$apt/sources.list.d/kolesky-src.sources"
  local o=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt/sources.list.d"
           -o "Dir::State::Lists=$apt/lists" -o Debug::NoLocking=1)
  apt-get "${o[@]}" update -qq
  (cd "$deps/download" && apt-get "${o[@]}" source --download-only "trilinos=$trilinos_version" >/dev/null)
  # Verify every file against the .dsc's Checksums-Sha256.
  local dsc; dsc=$(ls "$deps"/download/trilinos_*.dsc)
  awk '/^Checksums-Sha256:/{f=1; next} /^[^ ]/{f=0} f && NF==3 {print $1"  "$3}' "$dsc" \
    | (cd "$deps/download" && sha256sum -c --quiet -)
  log "downloaded and verified $(basename "$dsc")"
}
extract_trilinos() {
  local orig; orig=$(ls "$deps"/download/trilinos_*.orig.tar.* | head -1)
  local deb;  deb=$(ls "$deps"/download/trilinos_*.debian.tar.* | head -1)
  rm -rf "$src.tmp"; mkdir -p "$src.tmp"
  local top; top=$(set +o pipefail; tar tf "$orig" | head -1 | cut -d/ -f1)
  tar xf "$orig" -C "$src.tmp" --strip-components=1 \
    "$top/packages/kokkos" "$top/packages/kokkos-kernels"
  tar xf "$deb" -C "$src.tmp" debian/patches
  # Debian's own fix for Kokkos' test declarations, then ours (nvcc 13 / CUDA 13 / Hopper).
  (cd "$src.tmp" && patch -p1 -s < debian/patches/fix_kokkos_test_declarations.patch)
  for p in "$here"/cmake/patches/*.patch; do
    [ -e "$p" ] || continue
    (cd "$src.tmp" && patch -p1 -s --no-backup-if-mismatch < "$p") || { log "patch failed: $p"; exit 1; }
  done
  rm -rf "$src"; mv "$src.tmp" "$src"
}
shopt -s nullglob
# Rebuild when the patches or the build recipe change (bump kokkos_recipe when editing steps 2-3),
# not when the package list above changes.
kokkos_recipe=2
src_stamp_want=$( (echo "$trilinos_version recipe $kokkos_recipe"; cat "$here"/cmake/patches/*.patch) \
  | sha256sum | cut -c1-16)
if [ "$(cat "$src/.stamp" 2>/dev/null)" != "$src_stamp_want" ]; then
  origs=("$deps"/download/trilinos_*.orig.tar.*)
  [ ${#origs[@]} -gt 0 ] || fetch_trilinos
  log "extracting packages/kokkos and packages/kokkos-kernels"
  extract_trilinos
  echo "$src_stamp_want" > "$src/.stamp"
fi

# 3. Build and install each requested configuration.
build_config() {
  local name=$1; shift
  local prefix=$deps/$name
  local stamp_want; stamp_want=$(printf '%s\n' "$src_stamp_want" "$@" | sha256sum | cut -c1-16)
  if [ "$(cat "$prefix/.stamp" 2>/dev/null)" = "$stamp_want" ]; then
    log "$name: up to date ($prefix)"; return
  fi
  log "$name: building Kokkos"
  local b=$deps/build-$name
  rm -rf "$b" "$prefix"
  cmake -S "$src/packages/kokkos" -B "$b/kokkos" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_CXX_STANDARD=17 "$@" >"$b.kokkos.log" 2>&1 \
    || { tail -30 "$b.kokkos.log"; exit 1; }
  cmake --build "$b/kokkos" -j "$jobs" >>"$b.kokkos.log" 2>&1 || { tail -40 "$b.kokkos.log"; exit 1; }
  cmake --install "$b/kokkos" >>"$b.kokkos.log" 2>&1
  log "$name: building Kokkos Kernels"
  local kk_opts=(-DKokkosKernels_INST_DOUBLE=OFF -DKokkosKernels_INST_FLOAT=OFF
    -DKokkosKernels_INST_COMPLEX_DOUBLE=OFF -DKokkosKernels_INST_COMPLEX_FLOAT=OFF
    -DKokkosKernels_INST_ORDINAL_INT=OFF -DKokkosKernels_INST_ORDINAL_INT64_T=OFF
    -DKokkosKernels_INST_OFFSET_INT=OFF -DKokkosKernels_INST_OFFSET_SIZE_T=OFF
    -DKokkosKernels_INST_LAYOUTLEFT=OFF -DKokkosKernels_INST_LAYOUTRIGHT=OFF
    -DKokkosKernels_INST_EXECSPACE_SERIAL=OFF -DKokkosKernels_INST_EXECSPACE_OPENMP=OFF
    -DKokkosKernels_INST_EXECSPACE_CUDA=OFF -DKokkosKernels_INST_MEMSPACE_CUDAUVMSPACE=OFF
    -DKokkosKernels_ENABLE_TESTS=OFF -DKokkosKernels_ENABLE_EXAMPLES=OFF)
  if [ "$name" = cuda ]; then
    kk_opts+=(-DKokkosKernels_ENABLE_TPL_CUBLAS=ON -DKokkosKernels_ENABLE_TPL_CUSPARSE=OFF
              -DKokkosKernels_ENABLE_TPL_BLAS=ON -DKokkosKernels_ENABLE_TPL_LAPACK=ON)
  else
    kk_opts+=(-DKokkosKernels_ENABLE_TPL_BLAS=ON -DKokkosKernels_ENABLE_TPL_LAPACK=ON)
  fi
  cmake -S "$src/packages/kokkos-kernels" -B "$b/kk" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_CXX_STANDARD=17 -DKokkos_ROOT="$prefix" \
    "${kk_opts[@]}" "$@" >"$b.kk.log" 2>&1 || { tail -30 "$b.kk.log"; exit 1; }
  cmake --build "$b/kk" -j "$jobs" >>"$b.kk.log" 2>&1 || { tail -40 "$b.kk.log"; exit 1; }
  cmake --install "$b/kk" >>"$b.kk.log" 2>&1
  rm -rf "$b"
  echo "$stamp_want" > "$prefix/.stamp"
  log "$name: installed into $prefix"
}

for c in "${configs[@]}"; do
  case "$c" in
    openmp)
      build_config openmp -DBUILD_SHARED_LIBS=ON -DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_OPENMP=ON ;;
    cuda)
      cuda_root=${CUDA_ROOT:-/usr/local/cuda}
      build_config cuda -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
        -DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_CUDA=ON \
        -DKokkos_ENABLE_CUDA_LAMBDA=ON -DKokkos_ARCH_HOPPER90=ON \
        -DCMAKE_CXX_COMPILER="$src/packages/kokkos/bin/nvcc_wrapper" \
        -DCUDAToolkit_ROOT="$cuda_root" -DKokkos_CUDA_DIR="$cuda_root" ;;
    *) log "unknown configuration '$c' (openmp|cuda)"; exit 2 ;;
  esac
done
