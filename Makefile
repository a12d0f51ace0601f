# sbf: `make run` builds and converges the example workspace; `make test`
# is what CI runs. Everything a target needs it installs itself.
GO        ?= go
TOOLS     := $(CURDIR)/.tools
STATICCHECK_VERSION := v0.8.2
# Newer GoReleaser releases need a newer Go than 1.26; v2.15.1 embeds nfpm v2.45.2.
GORELEASER_VERSION := v2.15.1
GORELEASER := $(TOOLS)/goreleaser-$(GORELEASER_VERSION)/goreleaser

# Root builds Lima where the unprivileged user that runs VMs can read it.
LIMA_PREFIX := $(if $(filter 0,$(shell id -u)),/var/cache/sandboxforge/lima-1.2.1,$(TOOLS)/lima)

.PHONY: build run run-down test vet bench fmt lint clean lima e2e bench-e2e release sbf-kubevirt kube-test-bins test-kubevirt

# A source build: `sbf version` says devel, with the commit Go embeds. sbf
# runs sbf-server (beside it) for sbf mcp, sbf serve and compose files.
# Static, as released (cgo's libc costs sbf mcp ~1 MiB more, past its 32 MiB: docs/mcp.md).
build:
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -o bin/sbf ./cmd/sbf
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -o bin/sbf-server ./cmd/sbf-server

# Release archives for linux/darwin/windows, SHA256SUMS, .deb and .rpm
# packages, the Homebrew formula, install.sh and the controller's image
# (sbf-kubevirt_<version>_oci.tar, linux/amd64 and arm64) in dist/, then checked
# (scripts/release.sh): a snapshot unless HEAD carries a v* tag
# (RELEASE_MODE=snapshot|release to choose). Publishes nothing; GoReleaser
# runs with GOPROXY=off after `go mod download`.
release: $(GORELEASER)
	$(GO) mod download
	cd kubevirt && $(GO) mod download
	GO=$(GO) GORELEASER=$(GORELEASER) bash scripts/release.sh

$(GORELEASER):
	GOBIN=$(dir $(GORELEASER)) $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)

# The main job: converge examples/hello on a real VM, run a command in it,
# show the status (scripts/run-example.sh: builds sbf, runs sbf doctor, then
# builds what is missing: Lima v1.2.1, the offline guest image; as root it
# runs the example as an unprivileged user). run-down destroys that VM.
run:
	bash scripts/run-example.sh

run-down:
	bash scripts/run-example.sh down

# Lima v1.2.1 (the only version served here), with its guest agent and
# templates, in the layout limactl expects.
lima:
	bash scripts/build-lima.sh $(LIMA_PREFIX)

# Real VMs: needs root to prepare an unprivileged user, QEMU and the guest
# image (cached outside the checkout); see e2e/README.md.
e2e:
	bash e2e/run.sh

# The exec benchmark (sbf exec vs limactl shell) runs inside the e2e suite.
bench-e2e: e2e

vet:
	$(GO) vet ./...

# Every check CI runs (scripts/test.sh): the race-enabled tests with every
# vet analyzer, vet for windows and the darwin type-check (beside the tests,
# niced), then the kubevirt tests against a real kube-apiserver with bounded
# fuzz runs and the MCP conformance suite beside them, each step timed and
# never silent for more than 20 s.
test:
	GO=$(GO) KUBE_BINS=$(KUBE_BINS) bash scripts/test.sh

# The kubevirt backend is a program of its own, sbf-kubevirt, built from the nested module
# kubevirt/ (client-go and controller-runtime stay out of sbf and of its go test ./...).
# Its version: VERSION when given, else what git describes (sbf-kubevirt version prints it).
sbf-kubevirt:
	cd kubevirt && $(GO) build -ldflags "-X main.version=$(or $(VERSION),$(shell git describe --tags --always --dirty))" \
	  -o ../bin/sbf-kubevirt ./cmd/sbf-kubevirt

# A real kube-apiserver v1.34.3 (built from the module proxy, ~11 min cold) and Debian's
# etcd, cached outside the checkout, for the kubevirt tests.
KUBE_BINS ?= $(or $(SBF_KUBE_BINS),/var/cache/sandboxforge/kube-1.34.3)
kube-test-bins:
	bash scripts/kube-test-bins.sh $(KUBE_BINS)

# Without the binaries it fails (a green run that tested nothing hides a broken cache)
# unless SBF_KUBE_SKIP=1 says to skip; so does any test that skipped. It says how many ran
# (scripts/kubevirt-tests.sh). Everything here compiles the module once, with -race: staticcheck
# reads the race build, go test runs every vet analyzer (-vet=all) and the tests build the
# plugin with -race (client-go compiled a second time without it was ~110 s of a cold make test).
test-kubevirt: $(TOOLS)/bin/staticcheck
	@if [ ! -x "$(KUBE_BINS)/kube-apiserver" ] || [ ! -x "$(KUBE_BINS)/etcd" ]; then \
	  if [ "$$SBF_KUBE_SKIP" = 1 ]; then echo "test-kubevirt: SKIPPING the API-server tests (SBF_KUBE_SKIP=1):" \
	    "no kube-apiserver and etcd in $(KUBE_BINS)"; \
	  else echo "test-kubevirt: no kube-apiserver and etcd in $(KUBE_BINS): run make kube-test-bins," \
	    "or set SBF_KUBE_SKIP=1 to skip these tests"; exit 1; fi; fi
	cd kubevirt && GOFLAGS="$$GOFLAGS -race" $(TOOLS)/bin/staticcheck ./...
	cd kubevirt && SBF_KUBE_BINS=$(KUBE_BINS) GO=$(GO) bash ../scripts/kubevirt-tests.sh

# drivers/vz calls Apple's Virtualization.framework through cgo, which
# cannot be compiled here: type-check it for darwin/arm64 and darwin/amd64
# against a stub of github.com/Code-Hex/vz/v3 generated from that module's
# own source (drivers/vz/internal/stubgen).
.PHONY: check-darwin
check-darwin:
	$(GO) run ./drivers/vz/internal/stubgen -go $(GO)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

$(TOOLS)/bin/staticcheck:
	GOBIN=$(TOOLS)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint: $(TOOLS)/bin/staticcheck
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(TOOLS)/bin/staticcheck ./...

clean:
	rm -rf bin dist completions
