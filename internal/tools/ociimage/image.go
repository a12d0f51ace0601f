package main

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// meta is what the image says of itself, in its annotations and labels.
type meta struct {
	version, revision, source string
	created                   time.Time
}

func (m meta) annotations() map[string]string {
	return map[string]string{
		"org.opencontainers.image.created":  m.created.Format(time.RFC3339),
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.revision": m.revision,
		"org.opencontainers.image.source":   m.source,
		"org.opencontainers.image.title":    imageName,
		"org.opencontainers.image.version":  m.version,
	}
}

// layout is an OCI image layout: its files by name (blobs/sha256/HEX, index.json, ...).
type layout map[string][]byte

// add stores data as a blob and describes it.
func (l layout) add(mediaType string, data []byte) descriptor {
	d := descriptor{MediaType: mediaType, Digest: fmt.Sprintf("sha256:%x", sha256.Sum256(data)), Size: int64(len(data))}
	l[d.path()] = data
	return d
}

// path is where the layout keeps the blob d describes.
func (d descriptor) path() string { return "blobs/sha256/" + strings.TrimPrefix(d.Digest, "sha256:") }

func (l layout) addJSON(mediaType string, v any) (descriptor, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return descriptor{}, fmt.Errorf("encoding %s: %w", mediaType, err)
	}
	return l.add(mediaType, data), nil
}

// build makes the layout: index.json names an image index of one image per architecture. The
// architectures' layers are compressed at once, one core each.
func build(m meta, bins map[string]map[string]string) (layout, error) {
	layers := make([][]byte, len(architectures))
	diffIDs := make([]string, len(architectures))
	errs := make([]error, len(architectures))
	var wg sync.WaitGroup
	for i, arch := range architectures {
		wg.Go(func() { layers[i], diffIDs[i], errs[i] = layer(rootfs(bins[arch]), m.created) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	l := layout{}
	var images []descriptor
	var docker []dockerEntry
	for i, arch := range architectures {
		img, entry, err := l.addImage(m, arch, layers[i], diffIDs[i])
		if err != nil {
			return nil, err
		}
		images = append(images, img)
		docker = append(docker, entry)
	}
	index, err := l.addJSON(mediaIndex, manifest{SchemaVersion: 2, MediaType: mediaIndex, Manifests: images,
		Annotations: m.annotations()})
	if err != nil {
		return nil, err
	}
	index.Annotations = map[string]string{
		"org.opencontainers.image.ref.name": m.version,
		"io.containerd.image.name":          "docker.io/library/" + imageName + ":" + m.version,
	}
	if err := l.addTop(index, docker); err != nil {
		return nil, err
	}
	return l, nil
}

// addImage adds one architecture's layer, config and manifest.
func (l layout) addImage(m meta, arch string, gz []byte, diffID string) (descriptor, dockerEntry, error) {
	p := platform{Architecture: arch, OS: "linux"}
	if arch == "arm64" {
		p.Variant = "v8" // as Docker and the Go images describe arm64
	}
	created := m.created.Format(time.RFC3339)
	cfg, err := l.addJSON(mediaConfig, config{
		Created: created, Architecture: p.Architecture, Variant: p.Variant, OS: p.OS,
		Config: runConfig{
			User:       fmt.Sprintf("%d:%d", uid, uid),
			Env:        []string{"PATH=/usr/local/bin"},
			Entrypoint: []string{"/usr/local/bin/sbf-kubevirt"},
			WorkingDir: "/",
			Labels:     m.annotations(),
		},
		RootFS:  rootFS{Type: "layers", DiffIDs: []string{diffID}},
		History: []history{{Created: created, CreatedBy: "internal/tools/ociimage " + m.version}},
	})
	if err != nil {
		return descriptor{}, dockerEntry{}, err
	}
	lay := l.add(mediaLayer, gz)
	img, err := l.addJSON(mediaManifest, manifest{SchemaVersion: 2, MediaType: mediaManifest, Config: &cfg,
		Layers: []descriptor{lay}, Annotations: m.annotations()})
	if err != nil {
		return descriptor{}, dockerEntry{}, err
	}
	img.Platform = &p
	entry := dockerEntry{Config: cfg.path(), RepoTags: []string{imageName + ":" + m.version},
		Layers: []string{lay.path()}}
	return img, entry, nil
}

// addTop adds the layout's own files. Docker's image store loads every entry of manifest.json
// (one architecture, with --platform), and the last one loaded keeps the tag: amd64 comes last.
func (l layout) addTop(index descriptor, docker []dockerEntry) error {
	l["oci-layout"] = []byte(`{"imageLayoutVersion":"1.0.0"}`)
	top, err := json.Marshal(manifest{SchemaVersion: 2, MediaType: mediaIndex, Manifests: []descriptor{index}})
	if err != nil {
		return fmt.Errorf("encoding index.json: %w", err)
	}
	l["index.json"] = top
	slices.Reverse(docker)
	if l["manifest.json"], err = json.Marshal(docker); err != nil {
		return fmt.Errorf("encoding manifest.json: %w", err)
	}
	return nil
}
