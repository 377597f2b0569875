#!/bin/sh
# Build step for C# functions on Mono: compiles every .cs file of the zip with the SDK and the shim
# into /out/handler.exe. Dependencies are the <Reference> items of the zip's *.csproj whose
# <HintPath> names a vendored .dll (NuGet needs a network, so <PackageReference> is refused).
set -eu
cd /src
sources="$(find . -name '*.cs' -not -path './bin/*' -not -path './obj/*' | sort)"
if [ -z "$sources" ]; then
  echo "error: no .cs files in the zip"
  exit 1
fi
refs=""
for project in $(find . -maxdepth 1 -name '*.csproj'); do
  if grep -q '<PackageReference' "$project"; then
    echo "error: $project uses <PackageReference>; builds have no network, vendor the .dll and use <Reference> with <HintPath>"
    exit 1
  fi
  for hint in $(sed -n 's:.*<HintPath>\(.*\)</HintPath>.*:\1:p' "$project" | tr '\\' '/'); do
    if [ ! -f "$hint" ]; then
      echo "error: $project references $hint, which is not in the zip"
      exit 1
    fi
    echo "reference: $hint"
    refs="$refs -r:$hint"
    cp "$hint" /out/
  done
done
echo "mcs (C# $(mcs --version | sed 's/.*version //'))"
# shellcheck disable=SC2086 # word splitting of $refs and $sources is intended
mcs -nologo -target:exe -optimize+ -out:/out/handler.exe -r:System.Web.Extensions.dll $refs \
  /opt/gcfaas/Sdk.cs /opt/gcfaas/Shim.cs /opt/gcfaas/Json.mono.cs $sources
echo "build complete"
