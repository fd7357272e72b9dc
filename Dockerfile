# The exporter built from this source tree, as examples/docker-compose.yml uses
# it. Release images are built by GoReleaser instead (Dockerfile.goreleaser).
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=unknown
ARG BRANCH=unknown
RUN CGO_ENABLED=0 go build -trimpath -o /out/failover_exporter \
      -ldflags "-s -w \
        -X github.com/prometheus/common/version.Version=${VERSION} \
        -X github.com/prometheus/common/version.Revision=${REVISION} \
        -X github.com/prometheus/common/version.Branch=${BRANCH} \
        -X github.com/prometheus/common/version.BuildDate=$(date -u +%Y%m%d-%H:%M:%S) \
        -X github.com/prometheus/common/version.BuildUser=docker" \
      .

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/failover_exporter /bin/failover_exporter
USER 65532:65532
EXPOSE 9877
ENTRYPOINT ["/bin/failover_exporter"]
