#!/bin/sh
# The build stage of servers/ada/Dockerfile: what toolchain.sh does in the
# Debian 11 root, read from the same lines of the server's .gpr, done in the
# image (no chroot, no python).
#
#   image-build.sh libraries SERVER  the "-- lab-libraries:" from /lab/stage
#                                    (SERVER's .gpr, patches, lab-sources/)
#   image-build.sh server SERVER     gprbuild /lab/SERVER (with /lab/labenv);
#                                    /lab/out/bin/EXE, /lab/out/lab/run, facts
set -eu
cmd=${1:?usage: image-build.sh libraries|server SERVER}
server=${2:?usage: image-build.sh libraries|server SERVER}
stage=/lab/stage libbuild=/lab/libbuild prefix=/lab/prefix

die() { echo "image-build.sh: $*" >&2; exit 1; }

# The value of the line "-- lab-KEY: VALUE" of .gpr $1.
gpr_line() {
    sed -n "s/^-- *lab-$2: *//p" "$1" | head -1
}

# The single .gpr of folder $1.
gpr_in() {
    set -- "$1"/*.gpr
    if [ $# -ne 1 ] || [ ! -f "$1" ]; then die "expected exactly one .gpr for $server"; fi
    echo "$1"
}

build_libraries() {
    gpr=$(gpr_in "$stage")
    for lib in $(gpr_line "$gpr" libraries); do
        [ -f "$stage/$lib.tar.gz" ] \
            || die "no $server/lab-sources/$lib.tar.gz: run \`make build SERVER=$server\` first (it checks the pinned archives and puts them there)"
        tree=$libbuild/$lib
        mkdir -p "$tree"
        tar -xzf "$stage/$lib.tar.gz" --strip-components=1 -C "$tree"
        # shellcheck disable=SC2013  # patch file names, one word each
        for p in $(sed -n "s/^-- *lab-patch: *$lib  *\([A-Za-z0-9._-]*\).*/\1/p" "$gpr"); do
            patch -s -d "$tree" -p1 < "$stage/$p" || die "patch $p does not apply to $lib"
        done
        sh /lab/build-library.sh "$lib" "$tree" "$prefix"
    done
}

build_server() {
    dir=/lab/$server
    gpr=$(gpr_in "$dir")
    exe=$(sed -n 's/^-- *lab-executable: *\([A-Za-z0-9_-]*\).*/\1/p' "$gpr" | head -1)
    [ -n "$exe" ] || die "no '-- lab-executable:' line in $gpr"
    path=$prefix/share/gpr
    for lib in $(gpr_line "$gpr" libraries); do
        path=$path:$libbuild/$lib
    done
    # shellcheck disable=SC2046  # the .gpr's switches, one word each
    (cd "$dir" && ADA_PROJECT_PATH=$path gprbuild -p -q -j2 $(gpr_line "$gpr" gprflags) \
         -P "$(basename "$gpr")")
    mkdir -p /lab/out/bin /lab/out/lab
    cp "$dir/bin/$exe" /lab/out/bin/
    # /lab/run execs the server (the PID stays the one docker-init started).
    printf '#!/bin/sh\nexec /usr/local/bin/%s "$@"\n' "$exe" > /lab/out/lab/run
    {
        echo "toolchain=docker (debian:bullseye image)"
        echo "gnat_version=$(gnatls --version | head -1 | sed 's/^GNATLS *//')"
        echo "gprbuild_version=$(gprbuild --version | head -1 | sed 's/^GPRBUILD *//')"
        if grep -qiE '^with "(aws|servletada_aws)"' "$gpr"; then
            # shellcheck disable=SC2016  # dpkg-query's own field syntax
            echo "aws_package=$(dpkg-query -W -f='${Package} ${Version}' libaws20-dev)"
            # shellcheck disable=SC2016
            echo "aws_version=$(dpkg-query -W -f='${Version}' libaws20-dev | cut -d- -f1)"
        fi
        if [ -f "$stage/facts.txt" ]; then cat "$stage/facts.txt"; fi
        echo "built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    } > /lab/out/lab/facts.txt
    printf '#!/bin/sh\nexec cat /lab/facts.txt\n' > /lab/out/lab/facts
    chmod 755 /lab/out/lab/run /lab/out/lab/facts
}

case $cmd in
    libraries) build_libraries ;;
    server)    build_server ;;
    *)         die "unknown step '$cmd' (libraries or server)" ;;
esac
