#!/bin/sh
# Generates configure and the Makefile.in files.
set -e
cd "$(dirname "$0")"
mkdir -p build-aux m4
autoreconf -fi
