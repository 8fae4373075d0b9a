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

# The licences of the npm packages the bundle contains (the production
# dependencies, not the build tools), shipped with it: MIT asks for its
# notice to go with copies; elkjs is EPL-2.0 (or GPL-3.0-or-later), whose
# source is the npm package named here, unmodified.
{
  echo "The streamsql console (web/static) contains these npm packages, unmodified,"
  echo "each under its own licence, reproduced below. Their sources are the npm"
  echo "packages of these names and versions (https://www.npmjs.com/package/<name>)."
  npm ls --omit=dev --all --parseable | tail -n +2 | LC_ALL=C sort -u | while IFS= read -r d; do
    node -e 'const p=require(process.argv[1]+"/package.json"); console.log("\n==== "+p.name+" "+p.version+" ("+p.license+")\n")' "$d"
    lic=$(find "$d" -maxdepth 1 -iname 'LICEN[CS]E*' | head -1)
    if [ -n "$lic" ]; then cat "$lic"; else echo "(the package ships no licence file; its package.json says the licence above)"; fi
  done
} >../static/THIRD-PARTY-LICENSES.txt

# The sources' hash, computed the same way by web/bundle_test.go: every
# file under web/console but node_modules and dot-files, in byte order of
# its path, as "path\nsha256(content)\n", hashed with SHA-256.
find . -path ./node_modules -prune -o -type f ! -path '*/.*' -print | sed 's|^\./||' | LC_ALL=C sort |
  while IFS= read -r f; do printf '%s\n%s\n' "$f" "$(sha256sum <"$f" | cut -d' ' -f1)"; done |
  sha256sum | cut -d' ' -f1 >../static/.source-hash
echo "web/static rebuilt; sources $(cat ../static/.source-hash)"
