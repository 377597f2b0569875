#!/bin/sh
# Build step for Python functions, run by the builder in a throwaway container:
# /src holds the unpacked zip, /out becomes the artifact, no network.
set -eu
cd /src
if [ ! -f handler.py ]; then
  echo "error: handler.py not found at the top level of the zip"
  exit 1
fi
echo "checking handler.py"
python3 -m py_compile handler.py
cp -a /src/. /out/
if [ -f requirements.txt ]; then
  echo "installing requirements.txt (offline: only vendor/ and wheels/ are searched)"
  links=""
  for dir in /src/vendor /src/wheels; do [ -d "$dir" ] && links="$links --find-links $dir"; done
  # shellcheck disable=SC2086 # $links is a list of options
  python3 -m pip install --no-index --no-cache-dir --disable-pip-version-check --no-warn-script-location \
    $links --target /out/.python_packages -r requirements.txt
fi
# Byte-compile now: the runtime root filesystem and /function are read-only.
python3 -m compileall -q /out >/dev/null || true
echo "build complete"
