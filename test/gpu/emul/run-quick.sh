#!/bin/sh
# make check's run of kernel_emul_test: the quick cases (the full set takes minutes on a CPU).
exec ./kernel_emul_test --quick "$@"
