# Debian suite and packages of the offline Rust image (sourced by scripts/images/build-offline.sh).
# bookworm's rustc-web is newer than the specification's 1.78 and compiles code written for it.
SUITE=bookworm
EXTRA_SOURCES=""
PACKAGES="rustc-web,cargo-web,gcc,libc6-dev"
