# relock: build, test and demo targets. The tests run Redis in containers from
# the image named by RELOCK_REDIS_IMAGE; `make image` builds it locally when it
# is missing and no registry can provide it.

export RELOCK_REDIS_IMAGE ?= relock/redis:7

GO ?= go

# No reaper container (its image cannot be pulled; the fixture and
# scripts/sweep.sh clean up), and container ports reached on the loopback even
# when this process itself runs inside a container.
TEST_ENV = TESTCONTAINERS_RYUK_DISABLED=true TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1

.PHONY: docker image test test-defaults demo plot vet lint fmt-check bench sweep

docker:
	bash scripts/docker-up.sh

image: docker
	bash scripts/redis-image.sh

sweep:
	bash scripts/sweep.sh

test: image
	bash scripts/sweep.sh
	bash scripts/test.sh

# The same suite with every go-redis client the fixture makes at go-redis's
# defaults (ContextTimeoutEnabled false, ReadTimeout 3 s, 3 retries, RESP3),
# as users make them, instead of the fixture's fault-revealing settings.
test-defaults: image
	bash scripts/sweep.sh
	RELOCK_TEST_CLIENTS=defaults bash scripts/test.sh

# The demo lives in the integration module: it starts its Redis masters with
# the same container fixture as the tests.
demo: image
	cd integration && $(TEST_ENV) $(GO) run ./cmd/relock-demo

# One demo run drawn from its metrics: the demo writes the registry's
# readings over the run, cmd/relock-plot draws them (the README's plot).
plot: image
	cd integration && $(TEST_ENV) $(GO) run ./cmd/relock-demo -samples ../docs/demo-samples.csv
	cd integration && $(GO) run ./cmd/relock-plot -in ../docs/demo-samples.csv -out ../docs/demo-run.png

# Every module: the library, the metrics adapters, the integration tests,
# the peer benchmark.
MODULES = . prometheus otel integration integration/peers

vet:
	@for m in $(MODULES); do echo "go vet $$m/..."; (cd $$m && $(GO) vet ./...) || exit 1; done

# staticcheck on every module, at a fixed version fetched through the Go
# module proxy: go run with a version builds it apart, so no module's go.mod
# (the library's least of all) requires it.
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint:
	@for m in $(MODULES); do echo "staticcheck $$m/..."; (cd $$m && $(GO) run $(STATICCHECK) ./...) || exit 1; done

fmt-check:
	@out="$$(gofmt -l .)"; \
	if [ -n "$$out" ]; then echo "gofmt -l: these files need gofmt -w:"; echo "$$out"; exit 1; fi

# Side by side with go-redsync/redsync, bsm/redislock and rueidislock on 1, 3
# and 5 Redis masters in containers (integration/peers is its own module, so
# the library never depends on the peers). About 6 minutes; pass flags with
# BENCH_FLAGS, e.g. make bench BENCH_FLAGS='-quick' or BENCH_FLAGS='-out bench.md'
# (paths from here);
# a subset with RELOCK_BENCH_ONLY=contended,design (scenarios),
# RELOCK_BENCH_LIBS=relock,redsync and RELOCK_BENCH_MASTERS=3,5
# (integration/peers/doc.go).
bench: image
	cd integration/peers && RELOCK_BENCH_DIR=$(CURDIR) $(TEST_ENV) $(GO) run ./cmd/relock-bench $(BENCH_FLAGS)
