#!/usr/bin/env bash
# Ada toolchain for the lab's Ada servers (servers/ada/*/server.toml).
#
#   toolchain.sh ensure          make the toolchain ready (idempotent, cached)
#   toolchain.sh build NAME      build servers/ada/NAME with gprbuild
#   toolchain.sh exec NAME ARGS  exec the built server (the PID stays the server's);
#                                LAB_WRAPPER (words) runs it under a tool (valgrind)
#   toolchain.sh facts NAME      key=value lines for the run manifest
#   toolchain.sh mode            print the resolved mode (native|rootfs)
#   toolchain.sh sources NAME    check and unpack the pinned sources NAME needs
#
# A server whose .gpr has a line "-- lab-libraries: LIB..." is built against
# libraries from pinned upstream sources (servers/ada/sources.toml, checked by
# lab/setup/sources.py; exit 2 if an archive is missing or fails its check). They
# are built once per cache into the root (rootfs mode only): see build_library.
#
# ADA_TOOLCHAIN selects the mode:
#   native  gprbuild on PATH and an "aws" GNAT project it can find (Alire, distro)
#   rootfs  a Debian 11 (bullseye) minbase root in $LAB_CACHE/ada-bullseye with
#           gnat-10, gprbuild and libaws20-dev (AWS is not packaged in Debian 12/13);
#           sources are copied into it, built and run there with chroot
#   auto    (default) native when available, else rootfs
#
# Every build writes a stamp $LAB_CACHE/ada-build/NAME.built (the manifests'
# `artifact`) naming the mode and the binary; `ensure` deletes stamps that no
# longer match the resolved mode or whose binary is gone, so the lab rebuilds.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAB_ROOT=${LAB_ROOT:-$(cd "$HERE/../.." && pwd)}
LAB_CACHE=${LAB_CACHE:-$LAB_ROOT/.cache}
ROOT=$LAB_CACHE/ada-bullseye           # the bullseye root (rootfs mode)
READY=$ROOT/.lab-toolchain-ready       # written only after a complete setup
STAMPS=$LAB_CACHE/ada-build            # per-server build stamps
LOG=$LAB_CACHE/ada-toolchain.log       # long debootstrap/apt output goes here
SUITE=bullseye
MIRROR=${ADA_MIRROR:-http://deb.debian.org/debian}
# What the root holds: the compiler and AWS; make, gcc and GNATcoll for the
# servers built from pinned sources (ASF's libraries, Simple Components' C
# part); valgrind for `make cost`. Adding a package here installs it into an
# existing root at the next `ensure` (the ready stamp lists what it holds).
PACKAGES=(gnat gprbuild libaws20-dev make gcc libgnatcoll19-dev valgrind)

say() { printf 'ada-toolchain: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# ---------------------------------------------------------------- native probe
# True when gprbuild is on PATH and an aws.gpr is on its project search path
# (GPR_PROJECT_PATH, ADA_PROJECT_PATH, or the compiler's default path that
# `gnatls -v` prints).
native_available() {
    command -v gprbuild >/dev/null 2>&1 || return 1
    # No process substitution here: it needs /dev/fd, absent in a bare chroot.
    local dirs=() listed="" d
    IFS=: read -r -a dirs <<< "${GPR_PROJECT_PATH:-}:${ADA_PROJECT_PATH:-}"
    if command -v gnatls >/dev/null 2>&1; then
        listed=$(gnatls -v 2>/dev/null \
                 | sed -n '/^Project Search Path:/,$p' | sed '1d; s/^ *//') || true
    fi
    while IFS= read -r d; do
        dirs+=("$d")
    done <<< "$listed"
    for d in "${dirs[@]}"; do
        [[ -n $d && -f $d/aws.gpr ]] && return 0
    done
    return 1
}

# The mode; $1 (optional) is a server folder: one built against libraries
# from pinned sources is built in the root, so auto means rootfs for it.
resolve_mode() {
    case ${ADA_TOOLCHAIN:-auto} in
        native) if [[ -n ${1:-} && -n $(libraries_of "$1") ]]; then
                    say "error: $(basename "$1") builds libraries from pinned sources, only in the root: use ADA_TOOLCHAIN=rootfs or auto"
                    exit 2
                fi
                echo native ;;
        rootfs) echo rootfs ;;
        auto)   if [[ -z ${1:-} || -z $(libraries_of "$1") ]] && native_available; then
                    echo native
                else
                    echo rootfs
                fi ;;
        *)      die "ADA_TOOLCHAIN must be native, rootfs or auto (got '${ADA_TOOLCHAIN}')" ;;
    esac
}

# ---------------------------------------------------------------- rootfs helpers
# Mounts below $ROOT (there should be none; debootstrap cleans its own).
mounts_below_root() {
    awk -v r="$ROOT" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts
}

# Remove a half-made root. Refuses if something is still mounted inside it,
# and never crosses into another file system.
remove_root() {
    local m mounts
    mounts=$(mounts_below_root | sort -r)
    while IFS= read -r m; do
        if [[ -n $m ]]; then umount "$m" 2>/dev/null || true; fi
    done <<< "$mounts"
    [[ -z $(mounts_below_root) ]] || die "mounts remain under $ROOT; unmount them first"
    rm -rf --one-file-system "$ROOT"
}

print_manual_steps() {
    cat >&2 <<EOF
ada-toolchain: no native Ada toolchain with AWS, and not root: cannot build
the bullseye root. Either install gprbuild + AWS (Alire: alr get aws, or a
distribution package; with Alire run this script under "alr exec --") and
rerun with ADA_TOOLCHAIN=native, or as root run:

  apt-get install -y debootstrap
  debootstrap --variant=minbase $SUITE '$ROOT' $MIRROR
  chroot '$ROOT' apt-get update
  chroot '$ROOT' env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${PACKAGES[*]}
  printf 'package=%s\\n' ${PACKAGES[*]} > '$READY'
EOF
    exit 2
}

# The ready stamp: when the root was made and one package=NAME line for each
# package it holds, so that a longer PACKAGES list is installed incrementally.
write_ready() {
    { date -u +%Y-%m-%dT%H:%M:%SZ; printf 'package=%s\n' "${PACKAGES[@]}"; } > "$READY.$$.tmp"
    mv "$READY.$$.tmp" "$READY"
}

ensure_rootfs() {
    if [[ -f $READY ]]; then
        local missing=() p
        for p in "${PACKAGES[@]}"; do
            grep -qx "package=$p" "$READY" || missing+=("$p")
        done
        if [[ ${#missing[@]} -eq 0 ]]; then
            say "rootfs ready: $ROOT (cached)"
            return 0
        fi
        [[ $(id -u) -eq 0 ]] || print_manual_steps
        say "apt-get install ${missing[*]} in the cached root"
        { chroot "$ROOT" apt-get update \
          && chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive \
                 apt-get install -y --no-install-recommends "${missing[@]}" \
          && chroot "$ROOT" apt-get clean; } >>"$LOG" 2>&1 \
            || die "apt-get in the root failed, see $LOG"
        write_ready
        return 0
    fi
    [[ $(id -u) -eq 0 ]] || print_manual_steps
    mkdir -p "$LAB_CACHE"
    : > "$LOG"
    if ! command -v debootstrap >/dev/null 2>&1; then
        say "installing debootstrap (apt-get)"
        { apt-get update && apt-get install -y debootstrap; } >>"$LOG" 2>&1 \
            || die "apt-get install debootstrap failed, see $LOG"
    fi
    if [[ -e $ROOT ]]; then
        say "removing half-made root $ROOT (no ready stamp)"
        remove_root
    fi
    local t0=$SECONDS
    say "debootstrap --variant=minbase $SUITE (log: $LOG)"
    debootstrap --variant=minbase "$SUITE" "$ROOT" "$MIRROR" >>"$LOG" 2>&1 \
        || die "debootstrap failed, see $LOG"
    say "apt-get install ${PACKAGES[*]} in the root"
    { chroot "$ROOT" apt-get update \
      && chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive \
             apt-get install -y --no-install-recommends "${PACKAGES[@]}" \
      && chroot "$ROOT" apt-get clean; } >>"$LOG" 2>&1 \
        || die "apt-get in the root failed, see $LOG"
    write_ready
    say "rootfs ready in $((SECONDS - t0)) s: $ROOT"
}

ensure_native() {
    native_available || die "ADA_TOOLCHAIN=native but gprbuild or the aws project is missing"
    say "native toolchain: $(command -v gprbuild)"
}

# Forget build stamps made by another mode, or whose binary disappeared.
prune_stamps() {
    local s smode sbin sname mode
    [[ -d $STAMPS ]] || return 0
    for s in "$STAMPS"/*.built; do
        [[ -f $s ]] || continue
        sname=$(basename "$s" .built)
        if [[ -d $HERE/$sname ]]; then mode=$(resolve_mode "$HERE/$sname"); else mode=$(resolve_mode); fi
        smode=$(sed -n 's/^mode=//p' "$s")
        sbin=$(sed -n 's/^host_binary=//p' "$s")
        if [[ $smode != "$mode" || ! -x $sbin ]]; then
            say "stale build stamp removed: $(basename "$s")"
            rm -f "$s"
        fi
    done
}

# ---------------------------------------------------------------- per server
server_dir() {
    local name=$1
    [[ $name =~ ^[A-Za-z0-9_-]+$ ]] || die "bad server name '$name'"
    [[ -d $HERE/$name ]] || die "no server folder $HERE/$name"
    echo "$HERE/$name"
}

# The single .gpr of a server folder.
gpr_of() {
    local gprs=("$1"/*.gpr)
    [[ ${#gprs[@]} -eq 1 && -f ${gprs[0]} ]] || die "expected exactly one .gpr in $1"
    basename "${gprs[0]}"
}

# The libraries built from pinned sources: "-- lab-libraries: LIB..." in the .gpr.
libraries_of() {
    local gprs=("$1"/*.gpr)
    [[ -f ${gprs[0]} ]] || return 0
    sed -n 's/^-- *lab-libraries: *//p' "${gprs[0]}" | head -1
}

# Extra gprbuild switches: "-- lab-gprflags: ..." in the .gpr.
gprflags_of() {
    sed -n 's/^-- *lab-gprflags: *//p' "$1/$(gpr_of "$1")" | head -1
}

# The executable name: the line "-- lab-executable: NAME" in the .gpr.
exe_of() {
    local dir=$1 exe
    exe=$(sed -n 's/^-- *lab-executable: *\([A-Za-z0-9_-]*\).*/\1/p' "$dir/$(gpr_of "$dir")" | head -1)
    [[ -n $exe ]] || die "no '-- lab-executable:' line in $dir/$(gpr_of "$dir")"
    echo "$exe"
}

cmd_ensure() {
    local mode dir=""
    if [[ -n ${1:-} ]]; then dir=$(server_dir "$1"); fi
    mode=$(resolve_mode "$dir")
    local libs=""
    if [[ -n $dir ]]; then libs=$(libraries_of "$dir"); fi
    if [[ -n $libs ]]; then
        # The archives first: a missing or wrong one stops here (exit 2),
        # before the root is made or anything is built.
        # shellcheck disable=SC2086  # a list of library names
        (cd "$LAB_ROOT" && python3 -m lab.setup.sources check $libs) || exit $?
    fi
    if [[ $mode == native ]]; then ensure_native; else ensure_rootfs; fi
    prune_stamps
    if [[ -n $libs ]]; then cmd_sources "$1"; fi
}

# ---------------------------------------------------------------- pinned sources
SRC=/lab/src             # verified, unpacked archives (inside the root)
LIBBUILD=/lab/libbuild   # a copy of each, patched, where it is built
PREFIX=/lab/prefix       # what `make install-static` installs (ASF's libraries)

# Check every archive NAME needs (exit 2 naming one that is missing or fails
# its check), then unpack them into the root. Nothing is built here.
cmd_sources() {
    local dir libs
    dir=$(server_dir "${1:?usage: toolchain.sh sources NAME}")
    libs=$(libraries_of "$dir")
    [[ -n $libs ]] || return 0
    [[ -f $READY ]] || die "rootfs not ready; run: toolchain.sh ensure"
    # shellcheck disable=SC2086  # a list of library names
    # Also staged in the server folder (lab-sources/, git-ignored) with their
    # facts: the build stage of servers/ada/Dockerfile takes them from there.
    (cd "$LAB_ROOT" && python3 -m lab.setup.sources fetch $libs --into "$ROOT$SRC" \
         --stage "$dir/lab-sources" >/dev/null) || {
        local code=$?
        say "error: the sources of $(basename "$dir") are not usable (see above)"
        exit "$code"
    }
    rm -f "$dir/lab-sources/build-library.sh"   # staged by older labs: the image takes ../build-library.sh
    # This process's own temporary name: `lab build` holds the cache's build
    # lock, but toolchain.sh may also be run by hand beside it.
    local tmp=$dir/lab-sources/facts.txt.$$.tmp
    # shellcheck disable=SC2086  # a list of library names
    (cd "$LAB_ROOT" && python3 -m lab.setup.sources facts $libs) > "$tmp"
    if cmp -s "$tmp" "$dir/lab-sources/facts.txt"; then
        rm "$tmp"                                # unchanged: keep its time (a build input)
    else
        mv "$tmp" "$dir/lab-sources/facts.txt"
    fi
}

# The folder a library was unpacked to (inside the root): REPO-COMMIT.
source_folder() {
    (cd "$LAB_ROOT" && python3 -c 'import sys; from lab.setup.sources import load
print(load()[sys.argv[1]].folder)' "$1")
}

# Patches of server folder $1 for library $2: "-- lab-patch: LIB FILE" lines.
patches_of() {
    sed -n "s/^-- *lab-patch: *$2  *\([A-Za-z0-9._-]*\).*/\1/p" "$1/$(gpr_of "$1")"
}

# Build library $2 for server folder $1 in the root, once: a stamp records
# what it was built from (see key). The build tree is a fresh copy
# of the verified source with the server's patches applied (on the host).
build_library() {
    local dir=$1 lib=$2 folder patches="" p key stamp tree t0=$SECONDS
    folder=$(source_folder "$lib")
    for p in $(patches_of "$dir" "$lib"); do
        patches+="$p:$(sha256sum < "$dir/$p" | cut -c1-16) "
    done
    # What the build depends on: the source, the patches, the recipe, and the
    # libraries built before it for this server (LIBS_BEFORE).
    key="$folder ${patches% } recipe:$(sha256sum < "$HERE/build-library.sh" | cut -c1-16)"
    key+=" after:${LIBS_BEFORE:-none}"
    stamp=$ROOT$LIBBUILD/.built-$lib
    if [[ -f $stamp && $(cat "$stamp") == "$key" ]]; then
        return 0
    fi
    tree=$ROOT$LIBBUILD/$lib
    say "building library $lib ($folder${patches:+, patched: ${patches% }})"
    rm -rf "$tree" "$stamp"
    mkdir -p "$ROOT$LIBBUILD"
    cp -a "$ROOT$SRC/$folder" "$tree"
    for p in $(patches_of "$dir" "$lib"); do
        patch -s -d "$tree" -p1 < "$dir/$p" || die "patch $p does not apply to $folder"
    done
    cp "$HERE/build-library.sh" "$ROOT/lab/build-library.sh"
    chroot "$ROOT" /bin/sh /lab/build-library.sh "$lib" "$LIBBUILD/$lib" "$PREFIX" >>"$LOG" 2>&1 \
        || die "build of library $lib failed, see $LOG"
    printf '%s\n' "$key" > "$stamp"
    say "built library $lib in $((SECONDS - t0)) s"
}

# Copy folder $1 to $2 (in the root): fresh sources every time, but $2's
# obj/ and bin/ are kept for incremental builds; $1's own are not copied.
copy_fresh() {
    local from=$1 dest=$2
    mkdir -p "$dest"
    find "$dest" -mindepth 1 -maxdepth 1 ! -name obj ! -name bin -exec rm -rf {} +
    (cd "$from" && find . -mindepth 1 -maxdepth 1 ! -name obj ! -name bin ! -name lab-sources \
         -exec cp -a {} "$dest/" \;)
}

cmd_build() {
    local name=${1:?usage: toolchain.sh build NAME} dir mode gpr exe hostbin
    dir=$(server_dir "$name")
    mode=$(resolve_mode "$dir")
    gpr=$(gpr_of "$dir")
    exe=$(exe_of "$dir")
    if [[ $mode == rootfs ]]; then
        [[ -f $READY ]] || die "rootfs not ready; run: toolchain.sh ensure"
        local libs lib path="" flags
        libs=$(libraries_of "$dir")
        if [[ -n $libs ]]; then
            cmd_sources "$name"
            LIBS_BEFORE=""
            for lib in $libs; do
                build_library "$dir" "$lib"
                LIBS_BEFORE+="$(sha256sum < "$ROOT$LIBBUILD/.built-$lib" | cut -c1-16),"
                path+="$LIBBUILD/$lib:"
            done
        fi
        flags=$(gprflags_of "$dir")
        local dest=$ROOT/lab/$name
        say "copying $name and labenv sources into the root"
        copy_fresh "$dir" "$dest"
        # The shared settings package: every .gpr says with "../labenv/labenv.gpr".
        # Copied only when it differs, so that a build of another server
        # reading it at the same time does not see it half-copied.
        if ! diff -r -q -x obj -x bin "$HERE/labenv" "$ROOT/lab/labenv" >/dev/null 2>&1; then
            copy_fresh "$HERE/labenv" "$ROOT/lab/labenv"
        fi
        say "gprbuild -P $gpr (chroot, gnat of $SUITE)"
        chroot "$ROOT" /usr/bin/env ADA_PROJECT_PATH="$PREFIX/share/gpr:$path" \
            /bin/sh -c "cd /lab/$name && exec gprbuild -p -q -j2 $flags -P $gpr" \
            || die "build of $name failed"
        hostbin=$dest/bin/$exe
    else
        say "gprbuild -P $gpr (native)"
        (cd "$dir" && gprbuild -p -q -j2 -P "$gpr") || die "build of $name failed"
        hostbin=$dir/bin/$exe
    fi
    [[ -x $hostbin ]] || die "build produced no $hostbin"
    mkdir -p "$STAMPS"
    printf 'mode=%s\nhost_binary=%s\nbuilt=%s\n' "$mode" "$hostbin" \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$STAMPS/$name.built.$$.tmp"
    mv "$STAMPS/$name.built.$$.tmp" "$STAMPS/$name.built"
    say "built $name: $hostbin"
}

cmd_exec() {
    local name=${1:?usage: toolchain.sh exec NAME [ARGS]} dir mode exe
    shift
    dir=$(server_dir "$name")
    mode=$(resolve_mode "$dir")
    exe=$(exe_of "$dir")
    if [[ $mode == rootfs ]]; then
        [[ -x $ROOT/lab/$name/bin/$exe ]] || die "not built: run toolchain.sh build $name"
        if [[ -n ${LAB_WRAPPER:-} ]]; then
            # A wrapped start (make cost: valgrind) in a mount namespace of its
            # own, so that what it mounts goes away with it: see wrapped_exec.
            exec unshare --mount --propagation private -- "$HERE/toolchain.sh" \
                wrapped-exec "$name" "$@"
        fi
        # chroot execs the server: same PID, environment (PORT, WORKERS) kept.
        exec chroot "$ROOT" "/lab/$name/bin/$exe" "$@"
    else
        [[ -x $dir/bin/$exe ]] || die "not built: run toolchain.sh build $name"
        local wrap=()
        read -r -a wrap <<< "${LAB_WRAPPER:-}"
        exec "${wrap[@]}" "$dir/bin/$exe" "$@"
    fi
}

# Inside the private mount namespace of a wrapped rootfs start: the root's
# /proc (valgrind reads /proc/self/maps) and LAB_WRAP_OUT, the host folder the
# wrapper writes into, bind-mounted at /run/lab-wrap (LAB_WRAP_OUT is set to
# that path inside); then LAB_WRAPPER (the root's own valgrind) runs the server.
wrapped_exec() {
    local name=${1:?} dir exe wrap=()
    shift
    dir=$(server_dir "$name")
    exe=$(exe_of "$dir")
    read -r -a wrap <<< "${LAB_WRAPPER:-}"
    mount -t proc proc "$ROOT/proc" || die "cannot mount proc in the root (needs root)"
    if [[ -n ${LAB_WRAP_OUT:-} ]]; then
        mkdir -p "$ROOT/run/lab-wrap"
        mount --bind "$LAB_WRAP_OUT" "$ROOT/run/lab-wrap" || die "cannot bind $LAB_WRAP_OUT"
        export LAB_WRAP_OUT=/run/lab-wrap
    fi
    exec chroot "$ROOT" "${wrap[@]}" "/lab/$name/bin/$exe" "$@"
}

# Run a command with the toolchain of the current mode.
in_toolchain() {
    if [[ $MODE == rootfs ]]; then chroot "$ROOT" "$@"; else "$@"; fi
}

cmd_facts() {
    local name=${1:?usage: toolchain.sh facts NAME} dir
    dir=$(server_dir "$name")
    MODE=$(resolve_mode "$dir")
    echo "toolchain=$MODE"
    if [[ $MODE == rootfs ]]; then
        [[ -f $READY ]] || die "rootfs not ready; run: toolchain.sh ensure"
        echo "rootfs_suite=$SUITE"
        echo "rootfs_path=$ROOT"
    fi
    echo "gnat_version=$(in_toolchain gnatls --version 2>/dev/null | head -1 | sed 's/^GNATLS *//')"
    echo "gprbuild_version=$(in_toolchain gprbuild --version 2>/dev/null | head -1 | sed 's/^GPRBUILD *//')"
    if [[ $MODE == rootfs ]]; then
        # shellcheck disable=SC2016  # dpkg-query's own field syntax
        echo "gnat_package=$(chroot "$ROOT" dpkg-query -W -f='${Package} ${Version}' gnat-10 2>/dev/null || true)"
        # shellcheck disable=SC2016
        echo "gprbuild_package=$(chroot "$ROOT" dpkg-query -W -f='${Package} ${Version}' gprbuild 2>/dev/null || true)"
    fi
    if grep -qiE '^with "(aws|servletada_aws)"' "$dir/$(gpr_of "$dir")"; then
        # AWS.Version, the library's own constant (aws.ads). Debian's 20.2
        # package still says "20.0" there, and so does its Server: header.
        local ads const pkg=""
        # shellcheck disable=SC2016  # the script runs in the toolchain's sh
        ads=$(in_toolchain sh -c 'for f in /usr/share/ada/adainclude/aws/aws.ads \
              /usr/local/include/aws/aws.ads; do [ -f "$f" ] && cat "$f" && break; done' \
              2>/dev/null || true)
        const=$(printf '%s\n' "$ads" \
                | sed -n 's/^ *Version *: *constant *String *:= *"\([^"]*\)".*/\1/p' | head -1)
        # The distribution package, if AWS came from one (Debian: libaws*-dev).
        # shellcheck disable=SC2016  # dpkg-query's own field syntax
        pkg=$(in_toolchain dpkg-query -W -f='${db:Status-Abbrev}${Package} ${Version}\n' \
                  'libaws*-dev' 2>/dev/null | sed -n 's/^ii *//p' | head -1 || true)
        if [[ -n $pkg ]]; then
            echo "aws_package=$pkg"
            pkg=${pkg#* }
            echo "aws_version=${pkg%%-*}"
        else
            echo "aws_version=${const:-unknown}"
        fi
        echo "aws_version_constant=${const:-unknown}"
    fi
    local libs
    libs=$(libraries_of "$dir")
    if [[ -n $libs ]]; then
        # shellcheck disable=SC2086  # a list of library names
        (cd "$LAB_ROOT" && python3 -m lab.setup.sources facts $libs)
        local lib p
        for lib in $libs; do
            for p in $(patches_of "$dir" "$lib"); do
                echo "${lib//-/_}_patch=$p sha256:$(sha256sum < "$dir/$p" | cut -d' ' -f1)"
            done
        done
    fi
    if [[ -f $STAMPS/$name.built ]]; then
        sed -n 's/^built=/built_at=/p' "$STAMPS/$name.built"
    fi
}

main() {
    local cmd=${1:-}
    [[ $# -gt 0 ]] && shift
    case $cmd in
        ensure) cmd_ensure "$@" ;;
        sources) cmd_sources "$@" ;;
        build)  cmd_build "$@" ;;
        exec)   cmd_exec "$@" ;;
        wrapped-exec) wrapped_exec "$@" ;;
        facts)  cmd_facts "$@" ;;
        mode)   resolve_mode ;;
        *)      sed -n '2,9s/^# \{0,1\}//p' "$0" >&2; exit 64 ;;
    esac
}

main "$@"
