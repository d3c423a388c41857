# icebloom as a static, non-root container image.
#
#   docker build -t icebloom:0.1.0 .
#   docker run --rm icebloom:0.1.0 --help
#
# The build stage's Go matches the go directive of go.mod (cmd/icebloom's
# deploy_test.go checks that), and GOTOOLCHAIN=local makes a mismatch fail
# instead of fetching another toolchain. CGO_ENABLED=0 gives a static binary:
# the embedded SQLite catalog's driver (sqliteshim) is then the pure-Go
# modernc.org/sqlite on linux/amd64, arm64, 386 and arm. The build stage runs
# on the builder's platform and cross-compiles to the target's, so
# `docker buildx build --platform linux/amd64,linux/arm64` needs no emulation.
FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm AS build

ENV GOTOOLCHAIN=local CGO_ENABLED=0
WORKDIR /src

# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download

COPY . .
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH CGO_ENABLED=0 \
    go build -trimpath -ldflags "-s -w" -o /out/icebloom ./cmd/icebloom

# The rest of the scratch image's file system: CA certificates, a passwd and
# group entry for the unprivileged user (uid and gid 65532), its home and
# working directory, owned by it, and a /tmp. It is copied as one tree so that
# the directories keep their owner and mode.
RUN mkdir -p /rootfs/etc/ssl/certs /rootfs/data /rootfs/tmp \
    && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ \
    && echo 'icebloom:x:65532:65532:icebloom:/data:/sbin/nologin' > /rootfs/etc/passwd \
    && echo 'icebloom:x:65532:' > /rootfs/etc/group \
    && chown 65532:65532 /rootfs/data \
    && chmod 1777 /rootfs/tmp

FROM scratch

COPY --from=build /rootfs/ /
COPY --from=build /out/icebloom /usr/local/bin/icebloom

# HOME must be set: icebloom reads ~/.iceberg-go.yaml (which may be missing)
# and fails when it cannot resolve the home directory. The working directory
# is where the embedded catalog (./warehouse) lives when no catalog is
# configured; mount a volume there to keep it.
ENV HOME=/data
WORKDIR /data
USER 65532:65532

ENTRYPOINT ["/usr/local/bin/icebloom"]
CMD ["--help"]
