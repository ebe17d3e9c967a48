# Fetches a kernel source package of trixie-backports for kernel/build
# (sourced, not run), without installing anything system-wide: apt runs
# with a sources list, package lists and archive cache of its own under
# the kernel cache, and the package is unpacked there with dpkg-deb.
# shellcheck shell=bash

# backports_mirror: the Debian mirror this machine's own apt sources use
# (the first deb URI ending in /debian, in one-line or deb822 format), so
# that the repository names no host.
backports_mirror() {
	local files=() file uri
	shopt -s nullglob
	files=(/etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources)
	shopt -u nullglob
	for file in "${files[@]}"; do
		[[ -r $file ]] || continue
		uri=$(sed -n -e 's|^URIs:[[:space:]]*\(.*\)$|\1|p' \
			-e 's|^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\).*|\2|p' "$file" |
			tr ' ' '\n' | grep -m1 '^[a-z+]*://.*/debian/\?$' || true)
		if [[ -n $uri ]]; then
			echo "${uri%/}"
			return 0
		fi
	done
	return 1
}

# fetch_backports_source PACKAGE DIR: sets `version` (the package's version
# in trixie-backports) and `tarball` (the kernel tarball it carries,
# unpacked under DIR/<version>/). The package lists are fetched when DIR
# has none or apt knows no version; the .deb is downloaded once per
# version, and removed once unpacked (the tarball is what is kept).
fetch_backports_source() {
	local pkg=$1 dir=$2 mirror apt_opts keyring unpacked deb
	mkdir -p "$dir/lists/partial" "$dir/archives/partial"
	exec 8>"$dir/.lock"
	flock 8
	keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	[[ -f $keyring ]] || install_missing debian-archive-keyring
	if [[ ! -f $dir/sources.list ]]; then
		mirror=$(backports_mirror) ||
			die "no Debian mirror (a deb URI ending in /debian) in /etc/apt/sources*"
		echo "deb [signed-by=$keyring] $mirror trixie-backports main" >"$dir/sources.list"
	fi
	apt_opts=(-o "Dir::Etc::sourcelist=$dir/sources.list" -o Dir::Etc::sourceparts=-
		-o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir"
		-o "Dir::Cache::archives=$dir/archives" -o APT::Sandbox::User=root)
	candidate() {
		apt-cache "${apt_opts[@]}" policy "$pkg" 2>/dev/null |
			sed -n 's/^[[:space:]]*Candidate:[[:space:]]*//p' | grep -v '(none)' || true
	}
	version=$(candidate)
	if [[ -z $version ]]; then
		log "apt-get update (trixie-backports, lists in $dir)"
		apt-get "${apt_opts[@]}" -qq update >&2 || die "apt-get update of $dir/sources.list failed"
		version=$(candidate)
		[[ -n $version ]] || die "$pkg is not in trixie-backports"
	fi
	unpacked=$dir/$version
	tarball=$unpacked/usr/src/$pkg.tar.xz
	if [[ ! -f $tarball ]]; then
		log "downloading $pkg $version"
		rm -rf "$unpacked" "$dir/download"
		mkdir -p "$dir/download"
		if ! (cd "$dir/download" && apt-get "${apt_opts[@]}" -qq download "$pkg=$version" >&2); then
			# The lists may name a version the mirror no longer serves.
			apt-get "${apt_opts[@]}" -qq update >&2 || die "apt-get update of $dir/sources.list failed"
			version=$(candidate)
			unpacked=$dir/$version
			tarball=$unpacked/usr/src/$pkg.tar.xz
			(cd "$dir/download" && apt-get "${apt_opts[@]}" -qq download "$pkg=$version" >&2) ||
				die "could not download $pkg $version"
		fi
		deb=("$dir"/download/*.deb)
		dpkg-deb -x "${deb[0]}" "$unpacked.tmp" || die "dpkg-deb -x ${deb[0]} failed"
		mv "$unpacked.tmp" "$unpacked"
		rm -rf "$dir/download"
		[[ -f $tarball ]] || die "$pkg $version carries no $tarball"
	fi
	exec 8>&-
}
