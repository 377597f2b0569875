# Debian suite and packages of the offline Python image (sourced by scripts/images/build-offline.sh).
# trixie's python3 is 3.13: no Debian suite has 3.12, and 3.13 runs code written for it (PEP 695).
SUITE=trixie
EXTRA_SOURCES=""
PACKAGES="python3,python3-pip"
