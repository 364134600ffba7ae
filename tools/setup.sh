#!/usr/bin/env bash
# spconv set-up, as root on Debian 12 (the README's two commands):
#   bash tools/setup.sh          install what is needed, build, install, convert the sample matrix
#   bash tools/setup.sh test     install what is needed, build, run the whole test suite
# Environment: BUILD_DIR (default build), JOBS (default: all cores), SPCONV_CMAKE_ARGS (extra flags).
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-install}"
build="${BUILD_DIR:-build}"
jobs="${JOBS:-$(nproc)}"

packages=(g++ cmake ninja-build pkg-config libhdf5-dev hdf5-tools libzstd-dev zlib1g-dev libcli11-dev
          googletest libgtest-dev nlohmann-json3-dev python3 python3-h5py python3-scipy python3-numpy)
# Optional: python3-matplotlib draws the charts of `spconv bench --plot`; without it the bench
# still writes its tables, JSON and CSV and says why there are no charts.
optional=(python3-matplotlib)
missing=()
for p in "${packages[@]}" "${optional[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  if ! apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
    required=()
    for p in "${missing[@]}"; do [[ " ${optional[*]} " == *" $p "* ]] || required+=("$p"); done
    echo "setup: retrying without the optional packages (${optional[*]}): no charts from spconv bench --plot"
    [ ${#required[@]} -eq 0 ] || apt-get install -y -qq --no-install-recommends "${required[@]}"
  fi
fi

# shellcheck disable=SC2086
cmake -S . -B "$build" -G Ninja ${SPCONV_CMAKE_ARGS:-}
cmake --build "$build" -j "$jobs"

case "$mode" in
  install)
    cmake --install "$build"
    out="$build/poisson2d_40.h5"
    spconv tests/data/poisson2d_40.mtx --to csr "$out" --force
    spconv info "$out"
    ;;
  test)
    ctest --test-dir "$build" --output-on-failure -j "$jobs"
    ;;
  *)
    echo "usage: bash tools/setup.sh [install|test]" >&2
    exit 2
    ;;
esac
