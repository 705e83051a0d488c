# Latchkey in a container: built with Swift's Debian 12 image, run on Debian 12 slim with the
# Swift runtime linked in (--static-swift-stdlib), as an unprivileged user.
#
#   docker build -t latchkey .
#   docker run -p 8080:8080 -v latchkey-data:/var/lib/latchkey \
#       -e LATCHKEY_ISSUER=https://auth.example.com latchkey
#
# Settings come as LATCHKEY_* variables or a mounted configuration file (LATCHKEY_CONFIG); see
# docs/operations.md. scripts/check-packaging runs the same binary in a bare Debian 12 root.

FROM swift:6.3-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends libsqlite3-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The manifest first, so that fetching the dependencies is cached while the sources change.
COPY Package.swift ./
RUN swift package resolve
COPY . .
RUN swift build -c release --static-swift-stdlib --product latchkey \
    && install -m 0755 "$(swift build -c release --show-bin-path)/latchkey" /usr/local/bin/latchkey

FROM debian:bookworm-slim
# SQLite, libcurl (for Foundation's URLSession, which `latchkey login` uses) and the CA certificates
# are all the binary needs from the system (see scripts/check-packaging).
RUN apt-get update \
    && apt-get install -y --no-install-recommends libsqlite3-0 libcurl4 ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --home-dir /var/lib/latchkey --create-home latchkey
COPY --from=build /usr/local/bin/latchkey /usr/local/bin/latchkey
USER latchkey
WORKDIR /var/lib/latchkey
ENV LATCHKEY_DATA_DIR=/var/lib/latchkey/data \
    LATCHKEY_HOST=0.0.0.0 \
    LATCHKEY_PORT=8080
VOLUME ["/var/lib/latchkey"]
EXPOSE 8080
# docker stop sends SIGTERM: requests in flight get shutdown-timeout (30 s) to finish.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/latchkey"]
CMD ["serve"]
