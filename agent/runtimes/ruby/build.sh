#!/bin/sh
# Build step for Ruby functions: /src holds the unpacked zip, /out becomes the artifact, no network.
set -eu
cd /src
if [ ! -f handler.rb ]; then
  echo "error: handler.rb not found at the top level of the zip"
  exit 1
fi
echo "checking handler.rb"
ruby -c handler.rb
cp -a /src/. /out/
cd /out
if [ -f Gemfile ]; then
  echo "installing Gemfile dependencies (offline: from vendor/cache only)"
  bundle config set --local path vendor/bundle
  bundle config set --local cache_path vendor/cache
  bundle install --local --no-cache 2>&1
  bundle config set --local frozen true
fi
echo "build complete"
