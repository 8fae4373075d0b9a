#!/usr/bin/env bash
# Rebuilds the web console from web/console (npm packages pinned in its
# package-lock.json) into web/static, which is committed and embedded by
# web/doc.go, so `go build` needs no Node. Run it after changing anything
# under web/console: TestBundleFresh (web/bundle_test.go) fails while
# web/static/.source-hash does not match the sources.
set -euo pipefail
cd "$(dirname "$0")/console"

npm ci --no-audit --no-fund
npx tsc --noEmit
npx vite build

# The sources' hash, computed the same way by web/bundle_test.go: every
# file under web/console but node_modules and dot-files, in byte order of
# its path, as "path\nsha256(content)\n", hashed with SHA-256.
find . -path ./node_modules -prune -o -type f ! -path '*/.*' -print | sed 's|^\./||' | LC_ALL=C sort |
  while IFS= read -r f; do printf '%s\n%s\n' "$f" "$(sha256sum <"$f" | cut -d' ' -f1)"; done |
  sha256sum | cut -d' ' -f1 >../static/.source-hash
echo "web/static rebuilt; sources $(cat ../static/.source-hash)"
