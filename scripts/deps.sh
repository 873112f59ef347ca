#!/bin/sh
# Installs the Debian packages fusegen builds and tests with (DESIGN.md,
# "Toolchain").  Quick when everything is present; needs root (or sudo) only
# when something is missing.
set -eu

PACKAGES="gcc make libyaml-dev libcyaml-dev libcriterion-dev libjson-c-dev pkg-config \
libamdhip64-dev rocm-device-libs clang-19 lld-19 llvm-19 clang-tools-19 libclang-19-dev \
libclang-rt-19-dev valgrind gnuplot-nox"

missing=""
for p in $PACKAGES; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    case "$status" in
        *"install ok installed"*) ;;
        *) missing="$missing $p" ;;
    esac
done

if [ -z "$missing" ]; then
    echo "deps: all Debian packages present"
else
    echo "deps: installing:$missing"
    if [ "$(id -u)" -eq 0 ]; then
        SUDO=""
    elif command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "deps: error: root is needed to install:$missing" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

# CUDA is not a Debian package here: the toolkit lives in /usr/local/cuda.
if [ -x /usr/local/cuda/bin/nvcc ]; then
    echo "deps: $(/usr/local/cuda/bin/nvcc --version | tail -n 1)"
else
    echo "deps: error: /usr/local/cuda/bin/nvcc not found; install the CUDA 13 toolkit" >&2
    exit 1
fi
