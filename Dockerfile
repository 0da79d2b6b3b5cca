# Builds the worker and the publisher into one small image.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/briefd-worker ./cmd/worker \
 && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/briefd-publisher ./cmd/publisher

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER nonroot:nonroot
# In a container the metrics and health endpoints must be reachable from
# outside it (the binary's own default is loopback).
ENV BRIEFD_HTTP_ADDR=:9090
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/briefd-worker"]
CMD ["run"]
