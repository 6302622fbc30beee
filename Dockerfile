# tablestore: an Azure Table storage-compatible server, usable in place of the Table
# endpoint of mcr.microsoft.com/azure-storage/azurite (see docs/configuration.md).
#
#   docker build -t tablestore .
#   docker run -p 10002:10002 -v tablestore-data:/data tablestore
#
# From a binary already built for Debian bookworm (glibc), without the Rust image: the `prebuilt`
# target copies `tablestore` from the build context, so give it a folder holding only that file
# (scripts/ci/docker.sh builds the CI image so, from the binary the tests built):
#
#   docker build --target prebuilt -t tablestore -f Dockerfile path/to/folder-with-binary
#
# The image listens on 0.0.0.0:10002, keeps its data in the /data volume
# (/data/__tablestore__), runs as the unprivileged user 10002, and answers the
# HEALTHCHECK through `tablestore --healthcheck` (GET /_health; no curl needed).
# A command written for the Azurite image (`azurite-table --tableHost 0.0.0.0 …`) works
# unchanged: the entrypoint skips a leading `azurite`/`azurite-table` word, and `azurite` and
# `azurite-table` are links to tablestore for an entrypoint that names them.
#
# scripts/verify-docker-build.sh runs the same build steps outside a container.

ARG RUST_VERSION=1
ARG DEBIAN_RELEASE=bookworm

FROM rust:${RUST_VERSION}-${DEBIAN_RELEASE} AS builder
WORKDIR /src
COPY . .
# The target folder is a cache mount: touching the crate roots makes cargo rebuild the
# workspace's crates even when a copied source file is older than the cached build
# (dependencies stay cached).
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    touch src/lib.rs src/main.rs crates/*/src/lib.rs \
 && cargo build --release --locked --bin tablestore \
 && install -D -m 0755 target/release/tablestore /out/tablestore \
 && strip /out/tablestore \
 && /out/tablestore --version

# Everything of the image but the binary, shared by the two ways to get it (below).
FROM debian:${DEBIAN_RELEASE}-slim AS runtime
ARG UID=10002
RUN groupadd --system --gid "${UID}" tablestore \
 && useradd --system --uid "${UID}" --gid tablestore --home-dir /data --no-create-home \
      --shell /usr/sbin/nologin tablestore \
 && mkdir -p /data \
 && chown tablestore:tablestore /data
# Azurite's program names, for Testcontainers modules that set the entrypoint to `azurite`
# (.NET, Node, Go): run under either name, tablestore prints that command's readiness line.
# The links point at the binary each target below copies in.
RUN ln -s tablestore /usr/local/bin/azurite \
 && ln -s tablestore /usr/local/bin/azurite-table
# A folder mounted at /seed is imported before the server listens (docs/data.md).
ENV TABLESTORE_HOST=0.0.0.0 \
    TABLESTORE_LOCATION=/data \
    TABLESTORE_SEED_IF_PRESENT=/seed
VOLUME ["/data"]
EXPOSE 10002 8902
USER tablestore:tablestore
WORKDIR /data
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 \
  CMD ["tablestore", "--healthcheck"]
ENTRYPOINT ["tablestore"]
CMD []

# `--target prebuilt`: the binary from the build context (see the top of this file).
FROM runtime AS prebuilt
COPY tablestore /usr/local/bin/tablestore

# The default target: the binary the builder stage compiled.
FROM runtime
COPY --from=builder /out/tablestore /usr/local/bin/tablestore
