#!/usr/bin/env bash
# The newer generation of Prometheus, for the checks that run on both: Prometheus 3.5 (the
# long-term release), promtool and Alertmanager 0.33 from Debian's sid suite (trixie's 2.53 and
# 0.28 when sid has moved on past a 3.5), fetched with `apt-get download` through a private
# sources list (nothing on the system changes) and unpacked with `dpkg-deb -x` into DIR. Prints
# the directory of their binaries (DIR/usr/bin) on stdout, their versions on stderr; a DIR that
# holds them already is used as it is.
#
# Usage: tests/e2e/prometheus3.sh [DIR]   (default: target/prometheus-3)
set -euo pipefail
cd "$(dirname "$0")/../.."

dir=$(realpath -m "${1:-target/prometheus-3}")
bin=$dir/usr/bin
packages=(prometheus promtool prometheus-alertmanager)

if ! [ -x "$bin/prometheus" ] || ! [ -x "$bin/promtool" ] || ! [ -x "$bin/amtool" ]; then
    apt_dir=$dir/apt
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/sources" "$apt_dir/debs"
    apt_options=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir/sources"
        -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
        -o "Dir::State::Status=/dev/null" -o "APT::Sandbox::User=root")
    # The version each suite offers of a package, empty when none.
    offered() {
        apt-cache "${apt_options[@]}" policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: //p' | grep -v '(none)' || true
    }
    suite=
    for candidate in sid trixie; do
        cat >"$apt_dir/sources/debian.sources" <<SOURCES
Types: deb
URIs: http://deb.debian.org/debian
Suites: $candidate
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
        apt-get "${apt_options[@]}" update -qq >/dev/null
        # 3.5 (sid today) or the 2.53 trixie ships, the last of 2.x: either is newer than the
        # system's 2.42; sid past 3.5 (a 3.6 or a 4) is not the long-term release.
        case $(offered prometheus) in
            3.5.*|2.53.*) suite=$candidate; break ;;
        esac
    done
    [ -n "$suite" ] || { echo "prometheus3.sh: neither sid nor trixie offers Prometheus 3.5 or 2.53" >&2; exit 1; }
    (cd "$apt_dir/debs" && rm -f ./*.deb && apt-get "${apt_options[@]}" download -qq "${packages[@]}" >/dev/null 2>&1)
    for deb in "$apt_dir"/debs/*.deb; do
        dpkg-deb -x "$deb" "$dir"
    done
    rm -rf "$apt_dir"
fi

for tool in prometheus promtool prometheus-alertmanager amtool; do
    [ -x "$bin/$tool" ] || { echo "prometheus3.sh: $bin/$tool is missing" >&2; exit 1; }
done
{
    "$bin/prometheus" --version 2>&1 | head -n 1
    "$bin/prometheus-alertmanager" --version 2>&1 | head -n 1
} >&2
echo "$bin"
