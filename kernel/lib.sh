# Shared by the scripts of kernel/ (sourced, not run).
# shellcheck shell=bash

log() { echo "${0##*/}: $*" >&2; }

die() {
	log "error: $*"
	exit 1
}

# Installs the Debian packages among "$@" that are not installed yet
# (the project's one installer, .ci/apt-install).
install_missing() {
	"$(dirname "${BASH_SOURCE[0]}")/../.ci/apt-install" "$@" || die "could not install $*"
}

# The series kernel/build applies (series_patches) and the number it gives
# IORING_OP_GETDENTS (series_opcode: the opcode after the last one of Linux
# 7.3, IORING_OP_URING_CMD128 = 64), for the C tests, which Debian 12's
# headers cannot give it to.
# shellcheck disable=SC2034 # read by the scripts that source lib.sh
series_patches=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/patches
# shellcheck disable=SC2034
series_opcode=65

# --- initramfs lists for gen_init_cpio (test-vm, bench-vm, nowait-bench) ----
# initramfs_start LIST: starts an empty list with /dev/console and
# busybox as /bin/sh.
initramfs_start() {
	initramfs_list=$1
	initramfs_listed=" "
	: >"$initramfs_list"
	initramfs_dir /dev
	echo "nod /dev/console 0600 0 0 c 5 1" >>"$initramfs_list"
	initramfs_file /bin/busybox /bin/busybox
	echo "slink /bin/sh busybox 0777 0 0" >>"$initramfs_list"
}

# initramfs_dir GUEST_DIR: the directory and its parents.
initramfs_dir() {
	[[ $1 == / || $initramfs_listed == *" $1 "* ]] && return 0
	initramfs_dir "$(dirname "$1")"
	initramfs_listed+="$1 "
	echo "dir $1 0755 0 0" >>"$initramfs_list"
}

# initramfs_file GUEST_PATH HOST_PATH: an executable file.
initramfs_file() {
	initramfs_dir "$(dirname "$1")"
	echo "file $1 $(readlink -f "$2") 0755 0 0" >>"$initramfs_list"
}

# initramfs_libraries PROGRAM: the loader and the libraries PROGRAM asks
# for, at their paths.
initramfs_libraries() {
	local lib
	while read -r lib; do
		initramfs_file "$lib" "$lib"
	done < <(ldd "$1" 2>/dev/null | grep -o '/[^ ]*' | sort -u)
}

# initramfs_program HOST_PATH: a program as /usr/bin/NAME, with its
# libraries.
initramfs_program() {
	initramfs_file "/usr/bin/${1##*/}" "$1"
	initramfs_libraries "$1"
}

# initramfs_pack GEN_INIT_CPIO OUT: the archive, each line once (programs
# share libraries).
initramfs_pack() {
	awk '!seen[$0]++' "$initramfs_list" >"$initramfs_list.tmp" &&
		mv "$initramfs_list.tmp" "$initramfs_list"
	"$1" "$initramfs_list" >"$2" || die "gen_init_cpio failed"
}

# --- QEMU --------------------------------------------------------------------
# qemu_run SECONDS ARG...: QEMU without network, display or monitor, the
# serial console on stdout, no reboot (the guest's reboot ends the run),
# killed after SECONDS. The caller gives the accelerator, CPUs, memory,
# kernel, initramfs, command line and disks.
qemu_run() {
	local seconds=$1
	shift
	timeout -k 10 "$seconds" qemu-system-x86_64 -cpu max "$@" \
		-nic none -display none -monitor none -serial stdio -no-reboot </dev/null
}

# qemu_run_icount SECONDS ARG...: qemu_run with instruction counting, the
# rigs' mode: guest time counts instructions executed (kernel/README.md,
# "The rig").
qemu_run_icount() {
	local seconds=$1
	shift
	qemu_run "$seconds" -accel tcg,thread=single -icount shift=0,sleep=off "$@"
}
