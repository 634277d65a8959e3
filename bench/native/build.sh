#!/usr/bin/env bash
# Builds bench/native/pool_driver (see README.md) from the native core with the addon's flags.
# Usage: bash bench/native/build.sh [OUT] (default build-driver/pool_driver).
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-build-driver/pool_driver}"
mkdir -p "$(dirname "$out")"
xxhash_dir=$(node -p "require('path').join(require('path').dirname(require.resolve('xxhash-addon/package.json')), 'xxHash')")
g++ -std=c++17 -O3 -g -Wall -Wextra -Werror -Inative -I"$xxhash_dir" bench/native/pool_driver.cc \
  native/core/ckf.cc native/pool/packed_batch.cc native/pool/pool_canonical.cc native/pool/pool_filter_state.cc \
  native/pool/pool_plan.cc \
  -lpthread -o "$out"
