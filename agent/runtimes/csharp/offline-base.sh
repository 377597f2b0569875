# Debian suite and packages of the offline C# image (sourced by scripts/images/build-offline.sh).
# No Debian suite has .NET: Mono 6.8 (C# 7 language level of mcs) stands in offline.
SUITE=bookworm
EXTRA_SOURCES=""
PACKAGES="mono-mcs,mono-runtime,libmono-system-web-extensions4.0-cil,libmono-system-runtime-serialization4.0-cil"
