#!/usr/bin/env bash
# prep.sh: fills the folder `make bench` reads on the GPU machine (which has no
# network, no OpenJPEG, Grok, OpenJPH or FFmpeg), so every peer runs from one carried
# folder:
#   bin/   j2kc_bench (our C API driver), ffmpeg (j2k_cuda, native jpeg2000,
#          libopenjpeg), opj_compress/opj_decompress, grk_compress/grk_decompress,
#          ojph_compress/ojph_expand (OpenJPH, HTJ2K)
#   lib/   the shared libraries of Debian's OpenJPEG, Grok and OpenJPH packages and their
#          dependencies (apt-get download + dpkg -x; never installed here), and
#          ffmpeg's: FFmpeg's own and what they load (scripts/bundle-libs.sh)
#   site/  nvidia.nvimgcodec (its JPEG 2000 extension only) and nvidia.nvjpeg2k,
#          unpacked from the PyPI wheels
#   photos/ photographs from Debian's plasma-workspace-wallpapers
#   manifest.json  versions and sources of all of the above
#
#   BENCH_DIR=... CORE_LIB=.../libj2kcuda.a FFMPEG=.../ffmpeg bench/prep.sh
#
# BENCH_ONLY_BINS=1 refreshes bin/j2kc_bench and bin/ffmpeg (with its
# libraries) of a filled folder from the current tree (no network) and their
# lines in manifest.json.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
out=$(realpath -m "${BENCH_DIR:?}")
CORE_LIB=$(realpath "${CORE_LIB:?}")
FFMPEG=$(realpath "${FFMPEG:?}")
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$NVCC")")}
CUDA_LIBDIR=${CUDA_LIBDIR:-$(ls -d "$CUDA_HOME"/lib64 "$CUDA_HOME"/targets/x86_64-linux/lib 2>/dev/null | head -1)}
NVJPEG2K_WHEEL=${NVJPEG2K_WHEEL:-nvidia-nvjpeg2k-cu13==0.11.0.51}
NVIMGCODEC_WHEEL=${NVIMGCODEC_WHEEL:-nvidia-nvimgcodec-cu13==0.9.0.20}
PEER_DEBS="libopenjp2-tools libopenjp2-7 grokj2k-tools libgrokj2k1 openjph-tools libopenjph0.9"
PHOTO_DEB=plasma-workspace-wallpapers
# Photographs only (the package's other wallpapers are drawings and renders).
PHOTOS="BytheWater ColdRipple ColorfulCups DarkestHour EveningGlow FallenLeaf Grey Kite OneStandsOut Path summer_1am"
cache=${BENCH_CACHE:-$top/build/bench-cache}

only_bins=${BENCH_ONLY_BINS:-0}
if [ "$only_bins" = 1 ]; then
    [ -f "$out/manifest.json" ] || { echo "bench-prep: $out is not filled: run it without BENCH_ONLY_BINS"; exit 1; }
    mkdir -p "$out/bin"
else
    mkdir -p "$out" "$cache/debs" "$cache/whl"
    rm -rf "$out/bin" "$out/lib" "$out/site" "$out/photos"
    mkdir -p "$out/bin" "$out/lib" "$out/site" "$out/photos"
fi

echo "bench-prep: j2kc_bench"
# J2KC_BENCH_FLAGS: extra compiler flags, e.g. -DJ2KC_BENCH_TIER1_FIELD=<name>
# when the core's decoder config names its Tier-1 placement field otherwise.
g++ -O2 -std=c++17 ${J2KC_BENCH_FLAGS:-} -I"$top/cuda/include" -I"$CUDA_HOME/include" "$here/j2kc_bench.cpp" "$CORE_LIB" \
    -L"$CUDA_LIBDIR" -lcudart_static -lpthread -ldl -lrt -o "$out/bin/j2kc_bench"
cp "$FFMPEG" "$out/bin/ffmpeg"
strip "$out/bin/j2kc_bench" "$out/bin/ffmpeg"
# ffmpeg finds lib/ through its rpath ($ORIGIN/../lib): FFmpeg's libraries from
# beside the one given, then what they load but glibc and the C++ runtime
# (which j2kc_bench takes from the GPU machine too).
ffmpeg_libs() {
    local ff_lib
    ff_lib=$(dirname "$FFMPEG")/../lib
    if [ -d "$ff_lib" ]; then cp -P "$ff_lib"/lib*.so.[0-9]* "$out/lib/"; fi
    SKIP_LIBS='libstdc\+\+|libgcc_s' "$top/scripts/bundle-libs.sh" "$out/lib" "$out/bin/ffmpeg"
}
if [ "$only_bins" = 1 ]; then
    ffmpeg_libs
    ff_version=$("$out/bin/ffmpeg" -hide_banner -version | head -1)
    python3 - "$out/manifest.json" <<EOF
import json, sys
m = json.load(open(sys.argv[1]))
m.update(ffmpeg="$ff_version", core_lib="$CORE_LIB",
         core_lib_time="$(date -u -r "$CORE_LIB" '+%Y-%m-%d %H:%M UTC')",
         commit="$(git -C "$top" rev-parse --short HEAD)")
json.dump(m, open(sys.argv[1], "w"), indent=1)
EOF
    echo "bench-prep: bin/j2kc_bench and bin/ffmpeg of $out refreshed ($("$out/bin/j2kc_bench" caps))"
    exit 0
fi

# Debian packages: the peers and, for each library they load that is not
# part of the C runtime, the package that holds it.
echo "bench-prep: Debian packages"
cd "$cache/debs"
debs_of() {  # the packages that own the shared libraries of the given files
    LD_LIBRARY_PATH= ldd "$@" 2>/dev/null | awk '/=> \//{print $3}' | sort -u |
        grep -v -E '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
        while read -r lib; do dpkg -S "$(realpath "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null; done |
        cut -d: -f1 | sort -u
}
apt-get download $PEER_DEBS >/dev/null
rm -rf unpack && mkdir unpack
for d in *.deb; do dpkg -x "$d" unpack; done
tools="unpack/usr/bin/opj_compress unpack/usr/bin/opj_decompress unpack/usr/bin/grk_compress unpack/usr/bin/grk_decompress
       unpack/usr/bin/ojph_compress unpack/usr/bin/ojph_expand"
extra=$(LD_LIBRARY_PATH=unpack/usr/lib/x86_64-linux-gnu debs_of $tools unpack/usr/lib/x86_64-linux-gnu/*.so.* |
        grep -v -x -F -e libopenjp2-7 -e libgrokj2k1 -e libopenjph0.9 || true)
[ -n "$extra" ] && apt-get download $extra >/dev/null
for d in *.deb; do dpkg -x "$d" unpack; done
cp $tools "$out/bin/"
cp -L unpack/usr/lib/x86_64-linux-gnu/*.so.* unpack/lib/x86_64-linux-gnu/*.so.* "$out/lib/" 2>/dev/null || true
# Keep only what the tools load (the tools' own dependency closure).
need=$(LD_LIBRARY_PATH="$out/lib" ldd "$out"/bin/opj_* "$out"/bin/grk_* "$out"/bin/ojph_* | awk '/=> \//{print $3}' |
       grep -F "$out/lib/" | xargs -n1 basename | sort -u)
for f in "$out"/lib/*; do
    b=$(basename "$f")
    echo "$need" | grep -q -x -F "$b" || rm -f "$f"
done
strip --strip-unneeded "$out"/lib/* "$out"/bin/opj_* "$out"/bin/grk_* "$out"/bin/ojph_* 2>/dev/null || true
ffmpeg_libs
deb_versions=$(for d in *.deb; do dpkg-deb -W --showformat='${Package}=${Version} ' "$d"; done)
cd "$top"

echo "bench-prep: nvJPEG2000 wheels"
pip_dl() {
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d "$cache/whl" "$1"
}
pip_dl "$NVJPEG2K_WHEEL"
pip_dl "$NVIMGCODEC_WHEEL"
rm -rf "$cache/site" && mkdir -p "$cache/site"
for w in "$cache"/whl/nvidia_nvjpeg2k_cu13-*.whl "$cache"/whl/nvidia_nvimgcodec_cu13-*.whl; do
    python3 -m zipfile -e "$w" "$cache/site"
done
# The Python 3.12 module, the core library and the JPEG 2000 extension only
# (the wheel's other extensions and Python versions would make the folder too
# large to copy to the GPU machine).
s=$cache/site/nvidia
mkdir -p "$out/site/nvidia/nvimgcodec/extensions" "$out/site/nvidia/nvjpeg2k/lib"
# No nvidia/__init__.py: the folder joins the machine's own nvidia namespace.
cp "$s/nvimgcodec/__init__.py" "$s"/nvimgcodec/nvimgcodec_impl.cpython-312-*.so "$s/nvimgcodec/libnvimgcodec.so.0" \
   "$out/site/nvidia/nvimgcodec/"
cp "$s"/nvimgcodec/extensions/libnvjpeg2k_ext.so.* "$out/site/nvidia/nvimgcodec/extensions/"
cp "$s/nvjpeg2k/__init__.py" "$out/site/nvidia/nvjpeg2k/" 2>/dev/null || true
cp "$s"/nvjpeg2k/lib/libnvjpeg2k.so.* "$out/site/nvidia/nvjpeg2k/lib/"
whl_versions=$(ls "$cache"/whl | sed -E 's/-py3-.*//' | sort -u | paste -sd' ')

echo "bench-prep: photographs"
(cd "$cache/debs" && apt-get download $PHOTO_DEB >/dev/null && rm -rf photos && mkdir photos &&
 dpkg -x ${PHOTO_DEB}_*.deb photos)
for p in $PHOTOS; do
    src=$(ls -S "$cache"/debs/photos/usr/share/wallpapers/$p/contents/images/*.jpg | head -1)
    cp "$src" "$out/photos/$p.jpg"
done
photo_version=$(dpkg-deb -f "$cache"/debs/${PHOTO_DEB}_*.deb Version)

ff_version=$("$out/bin/ffmpeg" -hide_banner -version | head -1)
python3 - "$out/manifest.json" <<EOF
import json, sys
json.dump({
    "ffmpeg": "$ff_version",
    "debs": "$deb_versions".split(),
    "wheels": "$whl_versions".split(),
    "photos": {"package": "$PHOTO_DEB", "version": "$photo_version", "names": "$PHOTOS".split()},
    "core_lib": "$CORE_LIB",
    "core_lib_time": "$(date -u -r "$CORE_LIB" '+%Y-%m-%d %H:%M UTC')",
    "commit": "$(git -C "$top" rev-parse --short HEAD)",
}, open(sys.argv[1], "w"), indent=1)
EOF
echo "bench-prep: $out ($(du -sh "$out" | cut -f1)); on the GPU machine: make bench BENCH_DIR=${BENCH_DIR}"
