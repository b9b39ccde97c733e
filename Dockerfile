# syntax=docker/dockerfile:1
# The descheduler's image: `docker build -t descheduler:0.1.0 .` from the repository root.
# Two stages: the first installs the package and its dependencies into a virtual environment,
# the second copies only that environment onto a clean slim Python, runs as a numeric non-root
# user and holds no compilers, no pip cache, no source tree and no secrets. The base is pinned to
# a patch release; pin it by digest as well (python:3.11.13-slim-bookworm@sha256:…) for builds
# that must be reproducible byte for byte.

FROM python:3.11.13-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/descheduler
COPY pyproject.toml README.md ./
COPY descheduler ./descheduler
COPY strategies ./strategies
# Byte-compiled here, because the root filesystem is read-only at run time.
RUN /opt/descheduler/bin/pip install --no-cache-dir . \
    && /opt/descheduler/bin/descheduler version

FROM python:3.11.13-slim-bookworm
LABEL org.opencontainers.image.title="descheduler" \
      org.opencontainers.image.description="Load-aware Kubernetes descheduler and rebalancer" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/descheduler /opt/descheduler
# The extender's compiled kernels (numba) are cached under /tmp, the one writable place (an
# emptyDir in the manifests): compiled once per pod, before it reports ready.
ENV PATH=/opt/descheduler/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    NUMBA_CACHE_DIR=/tmp/numba
# 65532: the conventional "nonroot" uid/gid; numeric, so runAsNonRoot can verify it.
USER 65532:65532
# /metrics, /healthz and /readyz.
EXPOSE 8080
ENTRYPOINT ["descheduler"]
CMD ["run", "--policy", "/etc/descheduler/policy.yaml"]
