#!/bin/sh
# Production build step for C# functions on .NET 6 (Dockerfile.build): the same convention as the
# Mono build.sh, compiled with `dotnet publish` through a generated project. Offline: no NuGet
# packages, only <Reference> items with a vendored <HintPath>.
set -eu
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_CLI_HOME=/scratch NUGET_PACKAGES=/scratch/nuget HOME=/scratch
cd /src
if [ -z "$(find . -name '*.cs' -not -path './bin/*' -not -path './obj/*')" ]; then
  echo "error: no .cs files in the zip"
  exit 1
fi
references=""
for project in $(find . -maxdepth 1 -name '*.csproj'); do
  if grep -q '<PackageReference' "$project"; then
    echo "error: $project uses <PackageReference>; builds have no network, vendor the .dll and use <Reference> with <HintPath>"
    exit 1
  fi
  for hint in $(sed -n 's:.*<HintPath>\(.*\)</HintPath>.*:\1:p' "$project" | tr '\\' '/'); do
    [ -f "$hint" ] || { echo "error: $project references $hint, which is not in the zip"; exit 1; }
    references="$references<Reference Include=\"$(basename "$hint" .dll)\"><HintPath>/src/$hint</HintPath></Reference>"
  done
  # The generated project below replaces the user's; keep it from being compiled twice.
  mv "$project" "$project.user"
done
mkdir -p /scratch/gcfaas
cat > /scratch/gcfaas/handler.csproj <<PROJECT
<Project Sdk="Microsoft.NET.Sdk">
  <PropertyGroup>
    <TargetFramework>net6.0</TargetFramework>
    <OutputType>Exe</OutputType>
    <AssemblyName>handler</AssemblyName>
    <Nullable>disable</Nullable>
    <EnableDefaultCompileItems>false</EnableDefaultCompileItems>
  </PropertyGroup>
  <ItemGroup>
    <Compile Include="/opt/gcfaas/Sdk.cs;/opt/gcfaas/Shim.cs;/opt/gcfaas/Json.dotnet.cs" />
    <Compile Include="/src/**/*.cs" Exclude="/src/bin/**;/src/obj/**" />
    $references
  </ItemGroup>
</Project>
PROJECT
dotnet publish /scratch/gcfaas/handler.csproj -c Release -o /out --nologo 2>&1
echo "build complete"
