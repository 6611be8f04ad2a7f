#!/usr/bin/env bash
# fetch-debian-source.sh: fetch one source package's upstream tarball from
# Debian's archive and unpack it, without reading or writing the system's APT
# configuration.
#
#   scripts/fetch-debian-source.sh APT_DIR DEST_DIR PACKAGE VERSION SHA256
#
# APT_DIR holds a private APT set-up (its own apt.conf, sources.list with
# deb-src lines for sid and trixie, lists, cache and an empty dpkg status), so
# `apt-get update` here touches nothing outside it. VERSION is the Debian
# version with its epoch (ffmpeg=7:8.1.2-2). The .orig tarball must match
# SHA256; when VERSION is no longer in the archive the newest version offered
# is taken instead, with a warning that names it and its checksum.
set -euo pipefail

if [ $# -ne 5 ]; then
    echo "usage: $0 APT_DIR DEST_DIR PACKAGE VERSION SHA256" >&2
    exit 2
fi
apt_dir=$(realpath -m "$1")
dest=$(realpath -m "$2")
pkg=$3
version=$4
want_sha=$5
keyring=${DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [ -f "$dest/.debian-source" ]; then
    echo "fetch: $pkg already in $dest ($(cat "$dest/.debian-source"))"
    exit 0
fi
[ -r "$keyring" ] || { echo "fetch: $keyring missing: apt-get install debian-archive-keyring" >&2; exit 1; }
command -v apt-get >/dev/null || { echo "fetch: apt-get not found (or pass FFMPEG_SRC=/path)" >&2; exit 1; }

mkdir -p "$apt_dir"/etc/apt.conf.d "$apt_dir"/etc/preferences.d "$apt_dir"/etc/sources.list.d \
         "$apt_dir"/etc/trusted.gpg.d "$apt_dir"/state/lists/partial \
         "$apt_dir"/cache/archives/partial "$apt_dir"/download
touch "$apt_dir/state/status"
# sid's Release carries a Valid-Until that an archive snapshot outlives; its
# signature is still checked against the Debian archive keyring.
cat > "$apt_dir/etc/sources.list" <<SOURCES
deb-src [signed-by=$keyring check-valid-until=no] $mirror sid main
deb-src [signed-by=$keyring] $mirror trixie main
SOURCES
cat > "$apt_dir/apt.conf" <<CONF
Dir::Etc "$apt_dir/etc";
Dir::Etc::main "apt.conf";
Dir::Etc::parts "apt.conf.d";
Dir::Etc::sourcelist "sources.list";
Dir::Etc::sourceparts "sources.list.d";
Dir::Etc::preferences "preferences";
Dir::Etc::preferencesparts "preferences.d";
Dir::Etc::trusted "trusted.gpg";
Dir::Etc::trustedparts "trusted.gpg.d";
Dir::State "$apt_dir/state";
Dir::State::status "$apt_dir/state/status";
Dir::Cache "$apt_dir/cache";
APT::Sandbox::User "root";
Acquire::Languages "none";
Acquire::IndexTargets::deb::Packages::DefaultEnabled "false";
CONF
export APT_CONFIG="$apt_dir/apt.conf"

has_version() {
    # grep without -q reads all of apt-cache's output: stopping early would
    # make, with pipefail, apt-cache's SIGPIPE read as "not there".
    apt-cache showsrc "$pkg" 2>/dev/null | grep -x "Version: $version" >/dev/null
}
if ! has_version; then
    echo "fetch: apt-get update (private config in $apt_dir)"
    apt-get -q update >"$apt_dir/update.log" 2>&1 || { cat "$apt_dir/update.log" >&2; exit 1; }
fi

cd "$apt_dir/download"
if has_version; then
    spec="$pkg=$version"
    pinned=1
else
    newest=$(apt-cache showsrc "$pkg" | awk '/^Version:/ {print $2}' |
             while read -r v; do echo "$v"; done | sort -V | tail -n 1)
    [ -n "$newest" ] || { echo "fetch: no source package $pkg in the archive" >&2; exit 1; }
    # sort -V is close to Debian's order; let dpkg settle it.
    for v in $(apt-cache showsrc "$pkg" | awk '/^Version:/ {print $2}'); do
        if dpkg --compare-versions "$v" gt "$newest"; then newest=$v; fi
    done
    echo "WARNING: $pkg $version is no longer in Debian's archive; using the newest offered, $newest." >&2
    echo "WARNING: its checksum is not pinned; update the pin in the Makefile once it builds." >&2
    spec="$pkg=$newest"
    version=$newest
    pinned=0
fi
upstream=${version#*:}
upstream=${upstream%-*}
rm -f "${pkg}_${upstream}".orig.tar.*
apt-get -q source --download-only --tar-only "$spec" >"$apt_dir/source.log" 2>&1 ||
    { cat "$apt_dir/source.log" >&2; exit 1; }
tarball=$(ls "${pkg}_${upstream}".orig.tar.* | grep -v '\.asc$' | head -n 1)
got_sha=$(sha256sum "$tarball" | cut -d' ' -f1)
if [ "$pinned" = 1 ] && [ "$got_sha" != "$want_sha" ]; then
    echo "fetch: sha256 mismatch for $tarball: got $got_sha, pinned $want_sha" >&2
    exit 1
fi
[ "$pinned" = 1 ] || echo "WARNING: $tarball sha256 $got_sha" >&2

rm -rf "$dest.tmp"
mkdir -p "$dest.tmp"
tar -xf "$tarball" -C "$dest.tmp"
top=$(find "$dest.tmp" -mindepth 1 -maxdepth 1)
if [ "$(echo "$top" | wc -l)" = 1 ] && [ -d "$top" ]; then
    rm -rf "$dest"
    mv "$top" "$dest"
    rmdir "$dest.tmp"
else
    rm -rf "$dest"
    mv "$dest.tmp" "$dest"
fi
echo "$pkg $version sha256:$got_sha" > "$dest/.debian-source"
echo "fetch: $pkg $version unpacked in $dest"
