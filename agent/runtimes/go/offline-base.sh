# Debian suite and packages of the offline Go image (sourced by scripts/images/build-offline.sh).
# golang-1.21 of bookworm-backports is the specification's Go 1.21 (slices, min/max, clear);
# its toolchain lives in /usr/lib/go-1.21/bin (on the image's PATH).
SUITE=bookworm
EXTRA_SOURCES="bookworm-backports"
PACKAGES="golang-1.21-go,ca-certificates"
