#!/usr/bin/env bash
# bundle-libs.sh: make programs run from a folder carried to a machine that
# has none of this machine's libraries (the GPU machine of fate-bundle and
# bench-prep). Copies into LIBDIR every shared library the given programs load
# (ldd: the whole dependency closure), except the C library itself (glibc:
# libc, libm, libpthread, libdl, librt, the loader, ...), which the other
# machine has; then checks that each program, run from where it is, loads
# every library other than glibc's from LIBDIR.
# The programs must find LIBDIR through their DT_RPATH (FFmpeg's here carry
# $ORIGIN/../lib), which also serves their libraries' own dependencies; the
# libraries that only LIBDIR can hold (FFmpeg's own) must be there already.
# SKIP_LIBS: an extended regular expression of further sonames to leave to
# the other machine (bench-prep: libstdc++ and libgcc_s, which its other
# programs take from there too).
#   [SKIP_LIBS=...] scripts/bundle-libs.sh LIBDIR PROGRAM...
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 LIBDIR PROGRAM..." >&2; exit 2; }
libdir=$(realpath -m "$1")
shift
mkdir -p "$libdir"

leave='^(ld-linux[-.a-z0-9_]*|libc|libm|libmvec|libpthread|libdl|librt|libresolv|libutil|libanl|libnsl|libBrokenLocale)\.so'
[ -n "${SKIP_LIBS:-}" ] && leave="$leave|^(${SKIP_LIBS})"
resolved() {  # "soname path" for each library ldd resolves (the path without ..), or "soname not-found"
    ldd "$@" 2>/dev/null | awk '$2 == "=>" && $3 == "not" {print $1, "not-found"} $2 == "=>" && $3 ~ /^\// {print $1, $3}' |
        sort -u | while read -r soname path; do
            [ "$path" = not-found ] || path=$(realpath -m -s "$path")
            echo "$soname $path"
        done
}

# Copy by the name the loader asks for (the soname), following links.
resolved "$@" | while read -r soname path; do
    grep -q -E "$leave" <<<"$soname" && continue
    [ "$path" = not-found ] && { echo "bundle-libs: $soname is not found for $*" >&2; exit 1; }
    case $path in "$libdir"/*) continue ;; esac
    cp -L "$path" "$libdir/$soname"
    chmod 644 "$libdir/$soname"
done

bad=$(resolved "$@" | while read -r soname path; do
    grep -q -E "$leave" <<<"$soname" && continue
    case $path in "$libdir"/*) ;; *) echo "$soname => $path" ;; esac
done)
if [ -n "$bad" ]; then
    echo "bundle-libs: loaded from outside $libdir:" >&2
    echo "$bad" >&2
    exit 1
fi
echo "bundle-libs: $(ls "$libdir" | wc -l) libraries in $libdir ($(du -sh "$libdir" | cut -f1))"
