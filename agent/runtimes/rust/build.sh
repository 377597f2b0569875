#!/bin/sh
# Build step for Rust functions: the function is a library crate at the top level of the zip
# (Cargo.toml + src/lib.rs with `pub fn handle`); it is linked with the shim into /out/handler.
# No network: cargo runs --offline; dependencies come from a vendor/ folder configured with
# source replacement in the zip's .cargo/config.toml (what `cargo vendor` prints).
set -eu
export CARGO_HOME=/scratch/cargo CARGO_TARGET_DIR=/scratch/target HOME=/scratch CARGO_TERM_COLOR=never
cd /src
if [ ! -f Cargo.toml ] || [ ! -f src/lib.rs ]; then
  echo "error: Cargo.toml and src/lib.rs must be at the top level of the zip"
  exit 1
fi
package="$(sed -n '/^\[package\]/,/^\[/{s/^name[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p}' Cargo.toml | head -n 1)"
if [ -z "$package" ]; then
  echo "error: Cargo.toml has no [package] name"
  exit 1
fi
echo "function crate: $package"
mkdir -p gcfaas_shim
sed "s#__FUNCTION_PACKAGE__#$package#" /opt/gcfaas/Cargo.toml.tmpl > gcfaas_shim/Cargo.toml
cp /opt/gcfaas/main.rs gcfaas_shim/main.rs
echo "cargo build --release --offline"
cargo build --release --offline --manifest-path gcfaas_shim/Cargo.toml 2>&1
cp "$CARGO_TARGET_DIR/release/handler" /out/handler
echo "build complete"
