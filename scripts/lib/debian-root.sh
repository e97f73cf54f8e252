# Shared by scripts/fresh-check and scripts/twin-check (sourced, not run): makes and
# enters minimal Debian roots with debootstrap. The mirror is read from this machine's own
# apt sources, so no host name is written into the repository.

# debian_mirror: the first http(s) URI of a deb source for Debian's main archive.
debian_mirror() {
  local uri
  uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
    awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i }' | grep -v -- '-security' | head -n 1)
  if [ -z "$uri" ]; then
    uri=$(grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      grep -v -- '-security' | awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }' |
      head -n 1)
  fi
  [ -n "$uri" ] || { echo "debian-root: no Debian mirror in /etc/apt/sources*; add one" >&2; return 1; }
  echo "$uri"
}

# ensure_host_tool CMD PACKAGE: installs PACKAGE on the host when CMD is missing.
ensure_host_tool() {
  command -v "$1" >/dev/null && return 0
  echo "debian-root: installing $2 on the host"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2" >/dev/null
}

# make_debian_root SUITE DIR [EXTRA_PACKAGES_COMMA_SEPARATED]: a minimal root in DIR,
# made once and reused (DIR/.noeira-root-ok marks a finished one). Prints progress.
make_debian_root() {
  local suite=$1 dir=$2 extra=${3:-}
  if [ -f "$dir/.noeira-root-ok" ]; then
    echo "debian-root: reusing $dir ($suite)"
    return 0
  fi
  [ "$(id -u)" -eq 0 ] || { echo "debian-root: needs root (debootstrap, chroot)" >&2; return 1; }
  ensure_host_tool debootstrap debootstrap || return 1
  local mirror
  mirror=$(debian_mirror) || return 1
  rm -rf "$dir" && mkdir -p "$dir"
  echo "debian-root: debootstrap $suite into $dir (a few minutes; cached afterwards)"
  local include=ca-certificates
  [ -n "$extra" ] && include="$include,$extra"
  debootstrap --variant=minbase --include="$include" "$suite" "$dir" "$mirror" \
    >"$dir.debootstrap.log" 2>&1 ||
    { tail -n 20 "$dir.debootstrap.log" >&2; echo "debian-root: debootstrap failed (log: $dir.debootstrap.log)" >&2; return 1; }
  # The same mirror for apt inside the root (debootstrap writes only the main suite).
  printf 'deb %s %s main\n' "$mirror" "$suite" >"$dir/etc/apt/sources.list"
  touch "$dir/.noeira-root-ok"
}

# root_mounts_up DIR: /proc, /sys, /dev and resolv.conf inside the root.
root_mounts_up() {
  local dir=$1 m
  for m in proc sys dev dev/pts; do
    mountpoint -q "$dir/$m" || mount --bind "/$m" "$dir/$m"
  done
  cp -L /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
}

# root_mounts_down DIR: undoes root_mounts_up and any bind mount below DIR (deepest first).
# Does nothing when DIR does not exist (or is /): an empty prefix would match every mount
# of the host.
root_mounts_down() {
  local dir=$1 abs
  abs=$(cd "$dir" 2>/dev/null && pwd -P) || return 0
  case "$abs" in "" | /) return 0 ;; esac
  awk -v d="$abs/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
}

# root_bind DIR HOST_PATH ROOT_PATH [ro]: binds a host folder into the root.
root_bind() {
  local dir=$1 src=$2 dst=$3 mode=${4:-rw}
  mkdir -p "$dir$dst"
  mountpoint -q "$dir$dst" || mount --bind "$src" "$dir$dst"
  [ "$mode" = ro ] && mount -o remount,bind,ro "$dir$dst"
  return 0
}

# in_root DIR COMMAND...: runs a bash command line inside the root with a clean
# environment (env -i: nothing of the host's PATH, CUDA or Python leaks in).
in_root() {
  local dir=$1
  shift
  chroot "$dir" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    DEBIAN_FRONTEND=noninteractive /bin/bash -c "$*"
}
