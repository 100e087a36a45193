#!/usr/bin/env bash
# Installs the Debian packages Ember builds with, when any is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache git
  python3 python3-venv python3-dev
  flatbuffers-compiler libflatbuffers-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libxnnpack-dev libpthreadpool-dev libcpuinfo-dev
  libsentencepiece-dev pkg-config
  graphviz  # ember-inspect --plot draws program graphs with dot (#19)
  ${EMBER_EXTRA_PACKAGES:-}
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "Installing Debian packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
