#!/bin/sh
# Build one library from its pinned, verified sources (servers/ada/sources.toml):
#
#   build-library.sh LIB TREE PREFIX
#
# TREE is the unpacked (and, for EWS, patched) source; PREFIX is where
# `make install-static` puts ASF's libraries. Runs inside the Debian 11 root
# (toolchain.sh, with chroot) and in the Docker images' build stage, so both
# build the same way. Facts measured with GNAT 10.2.1 and AWS 20.2:
# - ada-util: UTIL_AWS_IMPL=2, because the default (3) does not compile
#   against AWS 20 and `make install-static` does not pass GPRFLAGS; GNAT 10
#   lacks To_Ada_Time_64, hence UTIL_TIME_64=no.
# - ada-servlet: its AWS container only (HAVE_EWS=no).
# - EWS: the static library in its tree (make lib-static-stamp).
# - Simple Components: source projects, compiled with the server: nothing here.
set -eu
lib=$1 tree=$2 prefix=$3
cd "$tree"
export UTIL_AWS_IMPL=2 ADA_PROJECT_PATH="$prefix/share/gpr"
jobs="-p -q -j2"
case $lib in
    ada-util)
        make setup BUILD=distrib PREFIX="$prefix" HAVE_ALIRE=no UTIL_OS=linux64 \
             UTIL_TIME_64=no HAVE_XML_ADA=yes HAVE_AWS=yes HAVE_CURL=no HAVE_LZMA=no
        make static GPRFLAGS="$jobs"
        make install-static ;;
    ada-el|ada-security)
        make setup BUILD=distrib PREFIX="$prefix" HAVE_ALIRE=no
        make static GPRFLAGS="$jobs"
        make install-static ;;
    ada-servlet)
        make setup BUILD=distrib PREFIX="$prefix" HAVE_ALIRE=no HAVE_EWS=no HAVE_AWS=yes
        make static GPRFLAGS="$jobs"
        make install-static ;;
    ews)
        make lib-static-stamp ;;
    simple-components)
        ;;
    *)
        echo "build-library.sh: no recipe for $lib" >&2
        exit 1 ;;
esac
