# Sourced by scripts/demo.sh and scripts/test.sh: install the Debian packages that are missing.
#   install_missing WHO PKG...   (WHO names the calling script in messages; SKIP_APT=1 skips)
# Needs root or sudo only when something is missing. Exits the caller on failure.
install_missing() {
    who=$1
    shift
    [ "${SKIP_APT:-0}" = 1 ] && return 0
    command -v dpkg-query >/dev/null 2>&1 || return 0
    missing=
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
    done
    if [ -z "$missing" ]; then
        printf '\n==> packages: all present (%s)\n' "$*"
        return 0
    fi
    printf '\n==> installing missing packages:%s\n' "$missing"
    if [ "$(id -u)" = 0 ]; then
        sudo=
    elif command -v sudo >/dev/null 2>&1; then
        sudo=sudo
    else
        echo "$who: need root or sudo to install:$missing" >&2
        exit 1
    fi
    t=$(date +%s)
    # shellcheck disable=SC2086
    { $sudo apt-get update -qq &&
      $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null; } ||
        { echo "$who: apt-get install failed" >&2; exit 1; }
    echo "installed in $(($(date +%s) - t)) s"
}
