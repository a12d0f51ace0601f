package composefile

import (
	"fmt"
	"strings"

	"github.com/compose-spec/compose-go/v2/format"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v4"
)

// service checks every path a service (or job, or pre_start hook) names
// that compose-go reads on the host or sbf ships: env_file, label_file,
// bind sources, build contexts and Dockerfiles, develop.watch paths, and
// what extends brings in from another file.
func (c *checker) service(file, key string, n *yaml.Node, s scope) {
	for _, e := range entries(n) {
		k := key + "." + e.key
		switch e.key {
		case "env_file":
			for i, item := range items(e.val) {
				p := item
				ik := listKey(k, e.val, i)
				if item.Kind == yaml.MappingNode {
					p, ik = field(item, "path"), ik+".path"
				}
				c.loaded(file, ik, p, s.base, s)
			}
		case "label_file":
			for i, item := range items(e.val) {
				c.loaded(file, listKey(k, e.val, i), item, s.base, s)
			}
		case "volumes":
			for i, item := range items(e.val) {
				c.volume(file, listKey(k, e.val, i), item, s)
			}
		case "pre_start":
			for i, hook := range items(e.val) {
				c.service(file, fmt.Sprintf("%s[%d]", k, i), hook, s)
			}
		case "build":
			c.build(file, k, e.val, s)
		case "extends":
			c.extends(file, k, e.val, s)
		case "develop", "x-develop": // compose-go reads x-develop as develop
			for i, w := range items(field(e.val, "watch")) {
				c.path(file, fmt.Sprintf("%s.watch[%d].path", k, i), field(w, "path"), s.base, s)
			}
		}
	}
}

// listKey names element i of a key that takes one value or a list.
func listKey(key string, list *yaml.Node, i int) string {
	if n := deref(list); n != nil && n.Kind == yaml.SequenceNode {
		return fmt.Sprintf("%s[%d]", key, i)
	}
	return key
}

// volume judges a bind mount's source (short or long syntax); named
// volumes and tmpfs name no host path.
func (c *checker) volume(file, key string, n *yaml.Node, s scope) {
	if n.Kind == yaml.MappingNode {
		if t, _ := s.value(field(n, "type")); t == types.VolumeTypeBind {
			c.path(file, key+".source", field(n, "source"), s.base, s)
		}
		return
	}
	short, ok := s.value(n)
	if !ok {
		return
	}
	v, err := format.ParseVolume(short)
	if err != nil || v.Type != types.VolumeTypeBind || v.Source == "" {
		return
	}
	c.judge(file, n, key, at(s.base, v.Source))
}

// build judges a local build context, its additional contexts and its
// Dockerfile (relative to the context); remote contexts are no host path.
func (c *checker) build(file, key string, n *yaml.Node, s scope) {
	if n.Kind != yaml.MappingNode {
		c.context(file, key, n, s)
		return
	}
	ctx, local := s.base, true
	if cn := field(n, "context"); cn != nil {
		ctx, local = c.context(file, key+".context", cn, s)
	}
	if df := field(n, "dockerfile"); df != nil && local && ctx != "" {
		c.path(file, key+".dockerfile", df, ctx, s)
	}
	c.sshKeys(file, key+".ssh", field(n, "ssh"), s)
	extra := field(n, "additional_contexts")
	if extra != nil && extra.Kind == yaml.MappingNode {
		for _, e := range entries(extra) {
			c.context(file, key+".additional_contexts."+e.key, e.val, s)
		}
		return
	}
	for i, item := range items(extra) {
		if v, ok := s.value(item); ok {
			if name, p, found := strings.Cut(v, "="); found {
				c.contextValue(file, fmt.Sprintf("%s.additional_contexts[%d] (%s)", key, i, name), item, p, s)
			}
		}
	}
}

// sshKeys judges build.ssh's key and socket files (ID=PATH in a list, or
// a mapping of ID to PATH); an ID alone is the agent's socket, no path.
func (c *checker) sshKeys(file, key string, n *yaml.Node, s scope) {
	if n = deref(n); n == nil {
		return
	}
	if n.Kind == yaml.MappingNode {
		for _, e := range entries(n) {
			c.path(file, key+"."+e.key, e.val, s.base, s)
		}
		return
	}
	for i, item := range items(n) {
		if v, ok := s.value(item); ok {
			if _, p, found := strings.Cut(v, "="); found && p != "" {
				c.judge(file, item, listKey(key, n, i), at(s.base, p))
			}
		}
	}
}

// context judges a build context that is a local folder, returning it.
func (c *checker) context(file, key string, n *yaml.Node, s scope) (dir string, local bool) {
	v, ok := s.value(n)
	if !ok || v == "" {
		return "", false
	}
	return c.contextValue(file, key, n, v, s)
}

func (c *checker) contextValue(file, key string, n *yaml.Node, v string, s scope) (string, bool) {
	if remoteContext(v) {
		return "", false
	}
	p := at(s.base, v)
	return p, c.judge(file, n, key, p)
}

// remoteContext is a build context compose-go does not resolve on the
// host: a URL, a git reference, another service or image.
func remoteContext(v string) bool {
	if strings.Contains(v, "://") || strings.HasPrefix(v, types.ServicePrefix) {
		return true
	}
	for _, prefix := range []string{"github.com/", "git@"} {
		if strings.HasPrefix(v, prefix) {
			return true
		}
	}
	return false
}

// extends judges the file a service extends and checks the service it
// takes from there (and what that one extends), whose relative paths
// start at that file's folder. Without a file, the service is in this
// file, whose services are all checked anyway, or (in a file read for
// extends) is checked here.
func (c *checker) extends(file, key string, n *yaml.Node, s scope) {
	ref, _ := s.value(n)
	if n.Kind == yaml.MappingNode {
		ref, _ = s.value(field(n, "service"))
	}
	fileNode := field(n, "file")
	if n.Kind != yaml.MappingNode || fileNode == nil {
		c.extended(file, ref, s)
		return
	}
	v, ok := s.value(fileNode)
	if !ok || v == "" {
		return
	}
	p := c.abs(at(s.loader, v))
	if !c.judge(file, fileNode, key+".file", p) {
		return
	}
	relwd := c.dirOf(s.loader, v)
	sub := scope{base: join(s.base, relwd), wd: s.wd, loader: join(s.loader, relwd), env: s.env}
	c.extended(p, ref, sub)
}

// extended checks one service of a file, read as extends reads it.
func (c *checker) extended(file, name string, s scope) {
	if name == "" || !c.visit(file, "extends\x00"+file+"\x00"+name+"\x00"+s.base) {
		return
	}
	for _, doc := range documents(c.read(file)) {
		if svc := field(field(doc, "services"), name); svc != nil {
			c.service(file, "services."+name, svc, s)
		}
	}
}
