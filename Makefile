# sbf: `make run` builds and converges the example workspace; `make test`
# is what CI runs. Everything a target needs it installs itself.
GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
TOOLS     := $(CURDIR)/.tools
STATICCHECK_VERSION := v0.8.2

.PHONY: build run test vet bench fmt lint clean

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/sbf ./cmd/sbf

run: build
	./bin/sbf validate -C examples/hello

vet:
	$(GO) vet ./...

test: vet
	$(GO) test -race ./...

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
	rm -rf bin
