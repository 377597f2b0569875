# Debian suite and packages of the offline Ruby image (sourced by scripts/images/build-offline.sh).
# bullseye's ruby is 2.7 (2.7.4), the specification's 2.7 line; its bundler is 2.2.
SUITE=bullseye
EXTRA_SOURCES=""
PACKAGES="ruby,ruby-bundler"
