#!/usr/bin/env bash
# The device build: wmtune for the GPU machine, built here, packed into one archive it can run.
#
# The GPU machine has the CUDA driver, g++, cmake and a Python with PyTorch 2.11 (pip wheel), but
# no LLVM 19 and none of Debian's packages, and a run carries at most 64 MiB. So wmtune is built
# here against what the device has and what it lacks is packed:
#   - libtorch: the torch/ folder of the same PyTorch wheel (pip download, into a cache outside
#     the repository), headers and libtorch_cpu/libc10 to link; at run time the device's own;
#   - LLVM: its static component libraries (WM_LLVM_STATIC), linked into the binary;
#   - the rest (XGBoost, ONNX, protobuf, spdlog, fmt and what they load): the shared libraries
#     the binary needs beyond glibc, libstdc++ and libtorch, copied into lib/.
# Output: ARCHIVE (tar.xz): bin/wmtune, lib/*.so*, models/ (the world-model checkpoint), and
# MANIFEST (what went in, with sizes and the wheel's version). benchmarks/gpu/device_wmtune.sh
# unpacks and runs it on the device.
#
# usage: scripts/device_pack.sh ARCHIVE [BUILD_DIR]
#   WM_TORCH_VERSION (default 2.11.0): the device's PyTorch; WM_DEVICE_CACHE: where the wheel
#   is kept (default ~/.cache/wmtune-device).
set -euo pipefail
ARCHIVE="$1"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${2:-$ROOT/build-device}"
VERSION="${WM_TORCH_VERSION:-2.11.0}"
CACHE="${WM_DEVICE_CACHE:-$HOME/.cache/wmtune-device}"
PY=/usr/bin/python3

mkdir -p "$CACHE"
TORCH="$CACHE/torch-$VERSION/torch"
if [ ! -f "$TORCH/lib/libtorch_cpu.so" ]; then
  echo "device_pack: fetching PyTorch $VERSION (its headers and libtorch_cpu) into $CACHE"
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
    --platform manylinux_2_28_x86_64 -d "$CACHE" "torch==$VERSION"
  wheel="$(ls "$CACHE"/torch-"$VERSION"-*.whl | head -n1)"
  rm -rf "$CACHE/torch-$VERSION.tmp"
  mkdir -p "$CACHE/torch-$VERSION.tmp"
  (cd "$CACHE/torch-$VERSION.tmp" && unzip -q "$wheel" 'torch/include/*' 'torch/lib/*' \
    'torch/version.py')
  rm -rf "$CACHE/torch-$VERSION"
  mv "$CACHE/torch-$VERSION.tmp" "$CACHE/torch-$VERSION"
fi

cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWM_BUILD_TESTS=OFF \
  -DWM_LLVM_STATIC=ON -DWM_TORCH_ROOT="$TORCH" -DWM_WITH_MPI=OFF \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,--as-needed" >/dev/null
cmake --build "$BUILD" --target wmtune

STAGE="$BUILD/pack"
rm -rf "$STAGE"
mkdir -p "$STAGE/bin" "$STAGE/lib" "$STAGE/models"
strip -o "$STAGE/bin/wmtune" "$BUILD/apps/wmtune/wmtune"
cp -r "$ROOT/models/." "$STAGE/models/"
# Shared libraries beyond glibc, libstdc++/libgcc and libtorch (the device's own).
LD_LIBRARY_PATH="$TORCH/lib" ldd "$STAGE/bin/wmtune" | awk '/=> \// {print $1, $3}' |
  while read -r name path; do
    case "$name" in
    libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | ld-linux* | libstdc++.so* | \
      libgcc_s.so* | libutil.so* | libtorch* | libc10* | libgomp* | libcudart* | libcupti* | libcuda.so*) ;;
    *) cp -L "$path" "$STAGE/lib/$name" ;;
    esac
  done
{
  echo "wmtune device pack: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "torch: $VERSION ($(grep "^__version__" "$TORCH/version.py" | cut -d"'" -f2))"
  (cd "$STAGE" && find . -type f -printf '%s\t%p\n' | sort -k2)
} >"$STAGE/MANIFEST"
tar -C "$STAGE" -cJf "$ARCHIVE.tmp" .
mv "$ARCHIVE.tmp" "$ARCHIVE"
echo "device_pack: $ARCHIVE ($(du -h "$ARCHIVE" | cut -f1)); contents in $STAGE/MANIFEST"
