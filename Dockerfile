# Build stage: the Swift toolchain plus the headers of librdkafka and jemalloc (the executable's allocator).
ARG SWIFT_VERSION=6.3
FROM swift:${SWIFT_VERSION}-bookworm AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends librdkafka-dev libjemalloc-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN swift build -c release --product campaign-pipeline --static-swift-stdlib \
    && cp "$(swift build -c release --show-bin-path)/campaign-pipeline" /campaign-pipeline

# Runtime stage: a slim Debian with only the shared libraries of librdkafka and jemalloc.
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends librdkafka1 libjemalloc2 libstdc++6 ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /campaign-pipeline /usr/local/bin/campaign-pipeline
COPY Config /etc/campaign-pipeline
USER nobody
# The metrics endpoint's port when CAMPAIGN_PIPELINE_METRICS_PORT or --metrics-port sets it (off by default).
EXPOSE 9464
ENTRYPOINT ["campaign-pipeline"]
CMD ["run", "--config", "/etc/campaign-pipeline/pipeline.json"]
