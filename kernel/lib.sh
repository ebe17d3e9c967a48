# Shared by kernel/build and kernel/test-vm (sourced, not run).
# shellcheck shell=bash

log() { echo "${0##*/}: $*" >&2; }

die() {
	log "error: $*"
	exit 1
}

# Installs the Debian packages among "$@" that are not installed yet, with
# --no-install-recommends; refreshes the package lists only when apt does
# not know one of them.
install_missing() {
	local missing=() pkg
	for pkg in "$@"; do
		if ! dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null |
			grep -q '^install ok installed$'; then
			missing+=("$pkg")
		fi
	done
	[[ ${#missing[@]} -eq 0 ]] && return 0
	log "installing ${missing[*]}"
	if ! apt-cache show "${missing[@]}" >/dev/null 2>&1; then
		apt-get update -qq >&2
	fi
	# A package list that knows the names can still be stale (an old
	# version no longer served): refresh once and retry before giving up.
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends "${missing[@]}" >&2 || {
		apt-get update -qq >&2 &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
				--no-install-recommends "${missing[@]}" >&2
	} || die "could not install ${missing[*]}"
}
