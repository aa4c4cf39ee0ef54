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
# The metrics endpoint (/metrics, /healthz, /readyz; README "Operations") is on in the image, on 9464: the health
# check below asks it. `docker run -e CAMPAIGN_PIPELINE_METRICS_PORT= --no-healthcheck …` turns both off.
ENV CAMPAIGN_PIPELINE_METRICS_PORT=9464
EXPOSE 9464
# Alive while the process answers /healthz (`probe --live`; the image has no curl). Readiness, which a rollout or
# docker-compose's depends_on wants, is `campaign-pipeline probe`. Only `run` serves the endpoint: run the other
# subcommands (replay, broker, …) with --no-healthcheck.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 CMD ["campaign-pipeline", "probe", "--live"]
ENTRYPOINT ["campaign-pipeline"]
# The file names localhost:9092: outside docker-compose (which sets them), give the brokers with
# CAMPAIGN_PIPELINE_BOOTSTRAP_SERVERS or --bootstrap-servers, or `run` exits 69 after 10 s.
CMD ["run", "--config", "/etc/campaign-pipeline/pipeline.json"]
