# Shared by kernel/build and kernel/test-vm (sourced, not run).
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
