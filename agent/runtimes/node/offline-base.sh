# Debian suite and packages of the offline Node.js image (sourced by scripts/images/build-offline.sh).
# bookworm's nodejs is 18, the specification's version.
SUITE=bookworm
EXTRA_SOURCES=""
PACKAGES="nodejs,npm"
